import type { Knex } from 'knex';

export const DASHBOARD_ROLES = ['viewer', 'admin'] as const;
export type DashboardRole = (typeof DASHBOARD_ROLES)[number];

export interface DashboardUser {
  id: string;
  lenderId: string;
  email: string;
  role: DashboardRole;
  createdAt: string;
  /** Set while the operator has deactivated the user: no sign-in, no session. */
  deactivatedAt: string | null;
}

export interface DashboardSession {
  user: DashboardUser;
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
  /** The lender's access epoch when the session was opened. */
  lenderEpoch: number;
}

interface UserRow {
  id: string;
  lender_id: string;
  email: string;
  role: string;
  password_hash: string;
  created_at: string;
  deactivated_at: string | null;
}

const toUser = (row: UserRow): DashboardUser => ({
  id: row.id,
  lenderId: row.lender_id,
  email: row.email,
  role: row.role as DashboardRole,
  createdAt: row.created_at,
  deactivatedAt: row.deactivated_at ?? null,
});

/** The only code that reads or writes dashboard users and their sessions. */
export class DashboardRepository {
  constructor(private readonly knex: Knex) {}

  /** False when the email is taken. */
  async insertUser(user: DashboardUser, passwordHash: string): Promise<boolean> {
    try {
      await this.knex('dashboard_users').insert({
        id: user.id,
        lender_id: user.lenderId,
        email: user.email,
        role: user.role,
        password_hash: passwordHash,
        created_at: user.createdAt,
      });
      return true;
    } catch (error) {
      // The unique email: the two databases word the violation differently, the row says it.
      if (await this.findUserByEmail(user.email)) return false;
      throw error;
    }
  }

  async findUserByEmail(email: string): Promise<{ user: DashboardUser; passwordHash: string } | null> {
    const row = await this.knex<UserRow>('dashboard_users').where({ email }).first();
    return row ? { user: toUser(row), passwordHash: row.password_hash } : null;
  }

  async listUsers(lenderId: string): Promise<DashboardUser[]> {
    const rows = await this.knex<UserRow>('dashboard_users')
      .where({ lender_id: lenderId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
    return rows.map(toUser);
  }

  async setPassword(userId: string, passwordHash: string): Promise<boolean> {
    return (await this.knex('dashboard_users').where({ id: userId }).update({ password_hash: passwordHash })) === 1;
  }

  /** Sign-in and every session of the user refused from now on (each session is revoked at its next request, saying why). */
  async deactivateUser(userId: string, at: string): Promise<void> {
    await this.knex('dashboard_users').where({ id: userId }).update({ deactivated_at: at });
  }

  /**
   * Sign-in allowed again, and every session of the user revoked in the same transaction, so none
   * opened before comes back: not one left unused while deactivated, nor one a sign-in was opening
   * while the deactivation committed (it had read the user active just before).
   */
  async reactivateUser(userId: string, at: string): Promise<void> {
    await this.knex.transaction(async (trx) => {
      await trx('dashboard_users').where({ id: userId }).update({ deactivated_at: null });
      await trx('dashboard_sessions').where({ user_id: userId }).whereNull('revoked_at').update({ revoked_at: at });
    });
  }

  async deleteUser(userId: string): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      await trx('dashboard_sessions').where({ user_id: userId }).delete();
      return (await trx('dashboard_users').where({ id: userId }).delete()) === 1;
    });
  }

  async insertSession(idHash: string, userId: string, at: string, expiresAt: string, lenderEpoch: number): Promise<void> {
    await this.knex('dashboard_sessions').insert({
      id_hash: idHash,
      user_id: userId,
      created_at: at,
      last_seen_at: at,
      expires_at: expiresAt,
      revoked_at: null,
      lender_epoch: lenderEpoch,
    });
  }

  /** A session that is neither revoked nor past its absolute expiry, with its user. */
  async findSession(idHash: string, now: string): Promise<DashboardSession | null> {
    type Row = UserRow & { session_created_at: string; last_seen_at: string; expires_at: string; lender_epoch: number | string };
    const row = await this.knex('dashboard_sessions as s')
      .join('dashboard_users as u', 'u.id', 's.user_id')
      .where('s.id_hash', idHash)
      .whereNull('s.revoked_at')
      .where('s.expires_at', '>', now)
      .first<Row | undefined>('u.*', 's.created_at as session_created_at', 's.last_seen_at', 's.expires_at', 's.lender_epoch');
    if (!row) return null;
    return {
      user: toUser(row),
      createdAt: row.session_created_at,
      lastSeenAt: row.last_seen_at,
      expiresAt: row.expires_at,
      lenderEpoch: Number(row.lender_epoch),
    };
  }

  async touchSession(idHash: string, at: string): Promise<void> {
    await this.knex('dashboard_sessions').where({ id_hash: idHash }).update({ last_seen_at: at });
  }

  async revokeSession(idHash: string, at: string): Promise<void> {
    await this.knex('dashboard_sessions').where({ id_hash: idHash }).whereNull('revoked_at').update({ revoked_at: at });
  }

  /** Revokes every live session of the user; how many there were. */
  async revokeSessionsOf(userId: string, at: string): Promise<number> {
    return this.knex('dashboard_sessions').where({ user_id: userId }).whereNull('revoked_at').where('expires_at', '>', at).update({ revoked_at: at });
  }

  /** Sessions past their expiry or revoked before `before`: nothing reads them again. */
  async deleteEndedSessions(before: string): Promise<number> {
    return this.knex('dashboard_sessions')
      .where('expires_at', '<', before)
      .orWhere((q) => {
        void q.whereNotNull('revoked_at').andWhere('revoked_at', '<', before);
      })
      .delete();
  }
}
