import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AccountsRepository } from '../accounts/accounts-repository.ts';
import { AdminError } from '../accounts/lender-admin.ts';
import type { LenderAccount } from '../accounts/model.ts';
import { randomBase62 } from '../platform/ids.ts';
import { DASHBOARD_ROLES, type DashboardRepository, type DashboardRole, type DashboardUser } from './dashboard-repository.ts';
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, UNKNOWN_USER_HASH, verifyPassword } from './passwords.ts';

// Dashboard users and their sessions: who may sign in to a lender's dashboard, and the server-side
// sessions that keep them signed in. API keys never reach a browser (section 5.6); these do instead.

export interface DashboardUsersDeps {
  users: DashboardRepository;
  accounts: Pick<AccountsRepository, 'findLender'>;
  now: () => Date;
}

/** A session ends this long after sign-in, whatever happens. */
export const SESSION_LIFETIME_MS = 12 * 60 * 60 * 1000;
/** A session not used for this long ends. */
const SESSION_IDLE_MS = 30 * 60 * 1000;
/** Use of a session is written down at most this often: a page view is not a write. */
const TOUCH_INTERVAL_MS = 60 * 1000;

const EMAIL = /^[^\s@<>"']{1,64}@[^\s@<>"']{1,188}\.[A-Za-z]{2,}$/;

/**
 * The one form of an email address that is stored, looked up and counted by the sign-in limit:
 * compatibility-normalised (a full-width or ligature spelling is the same address), trimmed,
 * lower-cased. Nothing else reshapes an address, so no spelling gets a counter of its own.
 */
export const normaliseEmail = (email: string) => email.normalize('NFKC').trim().toLowerCase();

function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw new AdminError(`password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`);
  }
}

/**
 * `admin dashboard-user create`: a user of one lender account. Without a password one is made up
 * (shown once by the CLI); a given one is only stored hashed.
 */
export async function createDashboardUser(
  deps: DashboardUsersDeps,
  input: { lenderId: string; email: string; role: string; password?: string },
): Promise<{ user: DashboardUser; password: string; generated: boolean }> {
  if (!(await deps.accounts.findLender(input.lenderId))) throw new AdminError(`No lender account ${input.lenderId}`);
  const email = normaliseEmail(input.email);
  if (!EMAIL.test(email) || email.length > 254) throw new AdminError(`"${input.email}" is not an email address`);
  if (!DASHBOARD_ROLES.includes(input.role as DashboardRole)) throw new AdminError(`role must be one of ${DASHBOARD_ROLES.join(', ')}; got "${input.role}"`);
  const generated = input.password === undefined;
  const password = input.password ?? randomBase62(24);
  checkPassword(password);
  const user: DashboardUser = {
    id: `dsu_${randomBase62(20)}`,
    lenderId: input.lenderId,
    email,
    role: input.role as DashboardRole,
    createdAt: deps.now().toISOString(),
    deactivatedAt: null,
  };
  if (!(await deps.users.insertUser(user, await hashPassword(password)))) throw new AdminError(`A dashboard user ${email} exists already`);
  return { user, password, generated };
}

export async function requireDashboardUser(deps: DashboardUsersDeps, email: string): Promise<DashboardUser> {
  const found = await deps.users.findUserByEmail(normaliseEmail(email));
  if (!found) throw new AdminError(`No dashboard user ${email}`);
  return found.user;
}

/** `admin dashboard-user revoke-sessions`: signs the user out everywhere, effective on their next page. */
export async function revokeDashboardSessions(deps: DashboardUsersDeps, email: string): Promise<number> {
  const user = await requireDashboardUser(deps, email);
  return deps.users.revokeSessionsOf(user.id, deps.now().toISOString());
}

/** `admin dashboard-user set-password`: a new password, and every session of the old one ended. */
export async function setDashboardPassword(deps: DashboardUsersDeps, email: string, password?: string): Promise<{ password: string; generated: boolean }> {
  const user = await requireDashboardUser(deps, email);
  const generated = password === undefined;
  const chosen = password ?? randomBase62(24);
  checkPassword(chosen);
  await deps.users.setPassword(user.id, await hashPassword(chosen));
  await deps.users.revokeSessionsOf(user.id, deps.now().toISOString());
  return { password: chosen, generated };
}

/** `admin dashboard-user deactivate`: no sign-in from now on, and every session ended at its next request. */
export async function deactivateDashboardUser(deps: DashboardUsersDeps, email: string): Promise<DashboardUser> {
  const user = await requireDashboardUser(deps, email);
  if (user.deactivatedAt) throw new AdminError(`Dashboard user ${user.email} is already deactivated (since ${user.deactivatedAt})`);
  const at = deps.now().toISOString();
  await deps.users.deactivateUser(user.id, at);
  return { ...user, deactivatedAt: at };
}

/** `admin dashboard-user reactivate`: sign-in works again; sessions from before stay ended. */
export async function reactivateDashboardUser(deps: DashboardUsersDeps, email: string): Promise<DashboardUser> {
  const user = await requireDashboardUser(deps, email);
  if (!user.deactivatedAt) throw new AdminError(`Dashboard user ${user.email} is active`);
  await deps.users.reactivateUser(user.id, deps.now().toISOString());
  return { ...user, deactivatedAt: null };
}

export async function removeDashboardUser(deps: DashboardUsersDeps, email: string): Promise<DashboardUser> {
  const user = await requireDashboardUser(deps, email);
  await deps.users.deleteUser(user.id);
  return user;
}

const hashSessionToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** The session's cookie value; only its hash is stored. */
export interface SignedIn {
  token: string;
  user: DashboardUser;
  expiresAt: string;
}

/**
 * A sign-in's outcome. `deactivated` is told only after the password matched, so it says no more
 * about an address than a successful sign-in would.
 */
export type SignInOutcome = { signedIn: SignedIn } | { refused: 'mismatch' | 'deactivated' };

/** Checks the password (always running scrypt, known email or not) and opens a session. */
export async function signIn(deps: DashboardUsersDeps, email: string, password: string): Promise<SignInOutcome> {
  if (password.length > MAX_PASSWORD_LENGTH) return { refused: 'mismatch' };
  const found = await deps.users.findUserByEmail(normaliseEmail(email));
  const matches = await verifyPassword(password, found?.passwordHash ?? UNKNOWN_USER_HASH);
  if (!found || !matches) return { refused: 'mismatch' };
  // The account is read after the password, and its epoch goes into the session: a deactivation
  // committing from here on moves the epoch, so this session is over before it is first used.
  const lender = await deps.accounts.findLender(found.user.lenderId);
  if (!lender || lender.deactivatedAt || found.user.deactivatedAt) return { refused: 'deactivated' };
  const now = deps.now();
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + SESSION_LIFETIME_MS).toISOString();
  await deps.users.insertSession(hashSessionToken(token), found.user.id, now.toISOString(), expiresAt, lender.accessEpoch ?? 0);
  return { signedIn: { token, user: found.user, expiresAt } };
}

export interface ActiveSession {
  user: DashboardUser;
  lender: LenderAccount;
  /** The synchronizer token every form of this session carries. */
  csrfToken: string;
}

/** The session behind a cookie value: live, not idle too long, its lender still there; else null. */
export async function sessionOf(deps: DashboardUsersDeps, token: string | undefined): Promise<ActiveSession | null> {
  const found = await lookUpSession(deps, token);
  return found === 'deactivated' ? null : found;
}

/**
 * Like `sessionOf`, but says `deactivated` when the session ended because its user or its lender
 * account was deactivated (or deactivated and reactivated since it was opened): the page then says
 * why. Such a session is revoked, so it stays over whatever happens to the account later.
 */
export async function lookUpSession(deps: DashboardUsersDeps, token: string | undefined): Promise<ActiveSession | 'deactivated' | null> {
  if (!token || !/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
  const now = deps.now();
  const idHash = hashSessionToken(token);
  const session = await deps.users.findSession(idHash, now.toISOString());
  if (!session) return null;
  const idleFor = now.getTime() - new Date(session.lastSeenAt).getTime();
  if (idleFor > SESSION_IDLE_MS) {
    await deps.users.revokeSession(idHash, now.toISOString());
    return null;
  }
  const lender = await deps.accounts.findLender(session.user.lenderId);
  if (!lender) return null;
  if (session.user.deactivatedAt || lender.deactivatedAt || session.lenderEpoch !== (lender.accessEpoch ?? 0)) {
    await deps.users.revokeSession(idHash, now.toISOString());
    return 'deactivated';
  }
  if (idleFor > TOUCH_INTERVAL_MS) await deps.users.touchSession(idHash, now.toISOString());
  return { user: session.user, lender, csrfToken: csrfTokenFor(token) };
}

export async function signOut(deps: DashboardUsersDeps, token: string): Promise<void> {
  await deps.users.revokeSession(hashSessionToken(token), deps.now().toISOString());
}

/**
 * The CSRF token of a session: an HMAC of the session's secret cookie value, so it is bound to the
 * session, needs no storage, and cannot be computed by a page that cannot read the cookie.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('dashboard-csrf').digest('base64url');
}

/** Constant-time comparison of a submitted token with the expected one. */
export function sameToken(expected: string, submitted: unknown): boolean {
  if (typeof submitted !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(submitted);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The sandbox's demo sign-in, public like the demo API key and for the same demo lender (section 5.5). */
export const DEMO_DASHBOARD_USER = { email: 'demo@sandbox.example', password: 'sandbox-demo-password' } as const;

/** Creates the demo user (an admin) unless it exists: every sandbox start calls this. */
export async function ensureDemoDashboardUser(deps: DashboardUsersDeps, lenderId: string): Promise<void> {
  if (await deps.users.findUserByEmail(DEMO_DASHBOARD_USER.email)) return;
  try {
    await createDashboardUser(deps, { lenderId, email: DEMO_DASHBOARD_USER.email, role: 'admin', password: DEMO_DASHBOARD_USER.password });
  } catch (error) {
    // Another process starting at the same time created it first.
    if (!(await deps.users.findUserByEmail(DEMO_DASHBOARD_USER.email))) throw error;
  }
}
