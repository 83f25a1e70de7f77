/**
 * The accounts and keys a conformance run against a separately started service needs, made with
 * the operator CLI (D23) as an operator would, and the suite's options that pass them on. Shared by
 * the mutant run and the Prism run; conformance/run-against-server.sh does the same in shell.
 */

/** One operator CLI command, its `--json` answer parsed. */
export type AdminCommand = <T>(...args: string[]) => Promise<T>;

export interface SuiteKeys {
  lender: string;
  otherLender: string;
  thirdLender: string;
  fourthLender: string;
  gdpr: string;
  pilot: string;
  /** Made and revoked when asked for. */
  revoked?: string;
}

/**
 * Lenders A to D, each with a `lender` key (four lenders: a peer cohort of three besides the asking
 * one, P22), a `gdpr_admin` key and a key limited to the pilot quota for A, and, with
 * `returnOrigin`, that origin registered for A.
 */
export async function makeSuiteKeys(admin: AdminCommand, options: { namePrefix: string; revoked?: boolean; returnOrigin?: string }): Promise<SuiteKeys> {
  const lenders: Array<{ id: string }> = [];
  for (const letter of ['A', 'B', 'C', 'D']) lenders.push(await admin<{ id: string }>('lender', 'create', '--name', `${options.namePrefix} Lender ${letter}`));
  const key = async (lenderId: string, role: string) => admin<{ id: string; api_key: string }>('key', 'create', '--lender', lenderId, '--role', role);
  const [a, b, c, d] = lenders.map((lender) => lender.id) as [string, string, string, string];
  const keys: SuiteKeys = {
    lender: (await key(a, 'lender')).api_key,
    otherLender: (await key(b, 'lender')).api_key,
    thirdLender: (await key(c, 'lender')).api_key,
    fourthLender: (await key(d, 'lender')).api_key,
    gdpr: (await key(a, 'gdpr_admin')).api_key,
    pilot: '',
  };
  const pilot = await key(a, 'lender');
  await admin('key', 'limit', '--key-id', pilot.id, '--rate-limit', '60', '--burst', '10');
  keys.pilot = pilot.api_key;
  if (options.revoked) {
    const revoked = await key(a, 'lender');
    await admin('key', 'revoke', '--key-id', revoked.id);
    keys.revoked = revoked.api_key;
  }
  if (options.returnOrigin) await admin('lender', 'set', '--id', a, '--return-origins', options.returnOrigin);
  return keys;
}

/** The suite's options for these keys. */
export function keyOptions(keys: SuiteKeys): string[] {
  return [
    ...['--key', keys.lender, '--other-lender-key', keys.otherLender, '--third-lender-key', keys.thirdLender, '--fourth-lender-key', keys.fourthLender],
    ...['--gdpr-key', keys.gdpr, '--pilot-key', keys.pilot],
    ...(keys.revoked ? ['--revoked-key', keys.revoked] : []),
  ];
}
