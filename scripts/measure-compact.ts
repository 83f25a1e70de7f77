// How long `admin gdpr compact` locks each table on PostgreSQL with 10^5 verifications
// (MEASURE_VERIFICATIONS): a fresh database on the server MEASURE_DATABASE_URL names, filled in
// bulk with rows of the sizes the service writes (each verification with 3 transitions, an event
// with its webhook copy, a delivery and its attempt, a tape, 12 months of income, a connection, a
// stored answer, 2 finished jobs and its benchmark membership), vacuumed and analysed as
// autovacuum would have; then the compaction, as the CLI runs it, table by table.
// `MEASURE_DATABASE_URL=postgres://… npx tsx scripts/measure-compact.ts`
import pg from 'pg';
import { compactCreatorData } from '../src/gdpr/compaction.ts';
import { StorageRepository } from '../src/gdpr/storage-repository.ts';
import { openDatabase, postgresMigrator } from '../src/platform/db/database.ts';
import { randomBase62 } from '../src/platform/ids.ts';

const server = process.env.MEASURE_DATABASE_URL;
if (!server) throw new Error('MEASURE_DATABASE_URL must name a PostgreSQL server');
const count = Number(process.env.MEASURE_VERIFICATIONS ?? 100_000);
const name = `civ_compact_${randomBase62(8).toLowerCase()}`;
const admin = new pg.Client({ connectionString: server });
await admin.connect();
await admin.query(`create database ${name}`);
const url = new URL(server);
url.pathname = `/${name}`;
try {
  const db = openDatabase(url.toString());
  await db.migrate();
  await db.close();
  const knex = postgresMigrator(url.toString());
  const t = `'2026-01-01T00:00:00.000Z'`;
  const fill = [
    `insert into lender_accounts (id, name, plan, jurisdiction, created_at, updated_at) values ('lnd_m', 'Measure', 'pilot', 'eu_gdpr', ${t}, ${t})`,
    `insert into verifications (id, lender_id, obligor_reference, creator_platforms, lender_name, product_type, status, consent_token_hash, consent_url, expires_at, created_at, updated_at, completed_at, tape_schema_version, consent_token_sealed)
     select 'vrf_m' || n, 'lnd_m', 'obligor-' || md5(n::text), '["youtube","stripe"]', 'Measure Lending', 'rbf', 'completed', md5('t' || n) || md5('u' || n), 'https://verify.example/consent', ${t}, ${t}, ${t}, ${t}, '2.0.0', repeat(md5(n::text), 4)
       from generate_series(1, ${count}) n`,
    `insert into verification_transitions (verification_id, from_status, to_status, trigger, at)
     select 'vrf_m' || n, s.f, s.t, 'measure', ${t} from generate_series(1, ${count}) n,
       (values (null, 'pending_consent'), ('pending_consent', 'processing'), ('processing', 'completed')) s(f, t)`,
    `insert into events (id, lender_id, verification_id, name, payload, occurred_at)
     select 'evt_m' || n, 'lnd_m', 'vrf_m' || n, 'verification.completed', '{"event":"verification.completed","obligor_reference":"obligor-' || md5(n::text) || '","data":{"status":"completed"},"pad":"' || repeat('x', 200) || '"}', ${t}
       from generate_series(1, ${count}) n`,
    `insert into webhook_endpoints (id, lender_id, url, events, secret_ciphertext, created_at) values ('whk_m', 'lnd_m', 'https://hooks.example/x', '["verification.completed"]', 'x', ${t})`,
    `insert into webhook_events (event_id, lender_id, body) select id, lender_id, payload from events`,
    `insert into webhook_deliveries (id, webhook_id, lender_id, event_id, event_name, verification_id, event_sequence, status, attempts, created_at)
     select md5(id)::uuid::text, 'whk_m', lender_id, id, name, verification_id, sequence, 'succeeded', 1, ${t} from events`,
    `insert into webhook_delivery_attempts (delivery_id, attempt, attempted_at, status_code, duration_ms, response_snippet)
     select id, 1, ${t}, 200, 12, 'ok' from webhook_deliveries`,
    `insert into tapes (verification_id, tape, generated_at)
     select 'vrf_m' || n, (select json_agg(json_build_object('month', m, 'amount_eur', 1000 + m, 'note', md5((n * m)::text)))::text from generate_series(1, 24) m), ${t}
       from generate_series(1, ${count}) n`,
    `insert into income_records (verification_id, platform, month, source_currency, source_amount, amount_eur)
     select 'vrf_m' || n, 'youtube', '2025-' || lpad(m::text, 2, '0'), 'EUR', 1000, 1000 from generate_series(1, ${count}) n, generate_series(1, 12) m`,
    `insert into platform_connections (verification_id, platform, status, updated_at, external_account_id, account_email_ciphertext, account_email_index)
     select 'vrf_m' || n, 'youtube', 'connected', ${t}, 'UC' || md5(n::text), repeat(md5(n::text), 3), md5('e' || n) from generate_series(1, ${count}) n`,
    `insert into idempotency_keys (lender_id, idempotency_key, request_fingerprint, response_status, response_body, verification_id, created_at, expires_at)
     select 'lnd_m', md5(n::text)::uuid::text, md5('f' || n), 201, '{"verification_id":"vrf_m' || n || '"}', 'vrf_m' || n, ${t}, ${t} from generate_series(1, ${count}) n`,
    `insert into jobs (kind, subject_id, payload, run_at, status, attempts, created_at)
     select k, 'vrf_m' || n, '{}', ${t}, 'done', 1, ${t} from generate_series(1, ${count}) n, (values ('verification.collect_income'), ('verification.expire_consent')) j(k)`,
    `insert into benchmark_members (verification_id, lender_id, product_type, buckets, shard)
     select 'vrf_m' || n, 'lnd_m', 'rbf', '{"median_monthly_income_eur":3,"income_stability":2}', n % 8 from generate_series(1, ${count}) n`,
    'vacuum analyze',
  ];
  for (const statement of fill) await knex.raw(statement);
  const { rows } = await knex.raw<{ rows: Array<{ size: string }> }>('select pg_size_pretty(pg_database_size(current_database())) as size');
  console.log(`${count} verifications, database ${rows[0]!.size}`);
  const done = await compactCreatorData(new StorageRepository(knex, 'postgres'));
  for (const table of done.tables) console.log(`${table.table.padEnd(28)} locked ${table.ms} ms`);
  console.log(`total ${done.totalMs} ms, longest lock ${done.longestLockMs} ms`);
  await knex.destroy();
} finally {
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
}
