import type { Command } from 'commander';
import * as dashboard from '../dashboard/dashboard-users.ts';

/** What the dashboard-user commands work with. */
export interface DashboardUserCliContext {
  dashboardUsers: dashboard.DashboardUsersDeps;
}

type Run = <T>(work: (ctx: DashboardUserCliContext) => Promise<T>) => Promise<T>;
type Print = (options: { json?: boolean }, data: unknown, lines: () => string[]) => void;

/** The first line of standard input: a password given this way stays out of the shell's history and `ps`. */
async function passwordFromStdin(): Promise<string> {
  let input = '';
  for await (const chunk of process.stdin) input += String(chunk);
  return input.split(/\r?\n/)[0] ?? '';
}

/** `admin dashboard-user …`: people who sign in to a lender's dashboard (never with an API key). */
export function addDashboardUserCommands(program: Command, run: Run, print: Print): void {
  const group = program.command('dashboard-user').description('lender dashboard users and their sessions');
  const json = (command: Command) => command.option('--json', 'machine-readable output');

  json(group.command('create').description('create a dashboard user; prints a one-time password unless --password-stdin'))
    .requiredOption('--lender <lenderId>', 'lender account id')
    .requiredOption('--email <email>', 'sign-in email, one per person')
    .requiredOption('--role <role>', 'viewer (reads) or admin (changes webhooks, sees secrets)')
    .option('--password-stdin', 'read the password from the first line of standard input')
    .action(async (options: { json?: boolean; lender: string; email: string; role: string; passwordStdin?: boolean }) => {
      const password = options.passwordStdin ? await passwordFromStdin() : undefined;
      const created = await run((ctx) =>
        dashboard.createDashboardUser(ctx.dashboardUsers, { lenderId: options.lender, email: options.email, role: options.role, password }),
      );
      print(options, { ...created.user, ...(created.generated ? { password: created.password } : {}) }, () => [
        `Created dashboard ${created.user.role} ${created.user.email} (${created.user.id}) for ${created.user.lenderId}.`,
        ...(created.generated ? [`Password (shown once, hand it over securely): ${created.password}`] : []),
      ]);
    });
  json(group.command('list').description("list a lender's dashboard users"))
    .requiredOption('--lender <lenderId>', 'lender account id')
    .action(async (options: { json?: boolean; lender: string }) => {
      const users = await run((ctx) => ctx.dashboardUsers.users.listUsers(options.lender));
      print(options, users, () =>
        users.length === 0
          ? ['No dashboard users.']
          : users.map((u) => `${u.id}  ${u.role.padEnd(7)} ${u.email}  created ${u.createdAt}${u.deactivatedAt ? `  (deactivated ${u.deactivatedAt})` : ''}`),
      );
    });
  json(group.command('revoke-sessions').description('sign a user out everywhere, effective on their next page'))
    .requiredOption('--email <email>', 'the user')
    .action(async (options: { json?: boolean; email: string }) => {
      const revoked = await run((ctx) => dashboard.revokeDashboardSessions(ctx.dashboardUsers, options.email));
      print(options, { email: options.email, revoked_sessions: revoked }, () => [`Revoked ${revoked} session(s) of ${options.email}.`]);
    });
  json(group.command('set-password').description('replace a password (ends every session); one-time password unless --password-stdin'))
    .requiredOption('--email <email>', 'the user')
    .option('--password-stdin', 'read the password from the first line of standard input')
    .action(async (options: { json?: boolean; email: string; passwordStdin?: boolean }) => {
      const password = options.passwordStdin ? await passwordFromStdin() : undefined;
      const result = await run((ctx) => dashboard.setDashboardPassword(ctx.dashboardUsers, options.email, password));
      print(options, { email: options.email, ...(result.generated ? { password: result.password } : {}) }, () => [
        `Password of ${options.email} replaced; their sessions ended.`,
        ...(result.generated ? [`Password (shown once, hand it over securely): ${result.password}`] : []),
      ]);
    });
  json(group.command('deactivate').description('refuse the user sign-in and end their sessions at their next page, until reactivated'))
    .requiredOption('--email <email>', 'the user')
    .action(async (options: { json?: boolean; email: string }) => {
      const user = await run((ctx) => dashboard.deactivateDashboardUser(ctx.dashboardUsers, options.email));
      print(options, user, () => [
        `Deactivated dashboard user ${user.email} at ${user.deactivatedAt}: sign-in refused, their sessions end at their next page.`,
      ]);
    });
  json(group.command('reactivate').description('let a deactivated user sign in again (their old sessions stay ended)'))
    .requiredOption('--email <email>', 'the user')
    .action(async (options: { json?: boolean; email: string }) => {
      const user = await run((ctx) => dashboard.reactivateDashboardUser(ctx.dashboardUsers, options.email));
      print(options, user, () => [`Reactivated dashboard user ${user.email}: they can sign in again.`]);
    });
  json(group.command('delete').description('remove a dashboard user and their sessions'))
    .requiredOption('--email <email>', 'the user')
    .action(async (options: { json?: boolean; email: string }) => {
      const user = await run((ctx) => dashboard.removeDashboardUser(ctx.dashboardUsers, options.email));
      print(options, user, () => [`Removed dashboard user ${user.email} (${user.id}).`]);
    });
}
