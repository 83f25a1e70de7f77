import type { Knex } from 'knex';

// Peer benchmarks: completed tapes counted per product type, metric and bucket, kept up to date when
// a tape is completed, scored again or erased, so a benchmark never reads the tapes themselves. A
// member row remembers which buckets a tape counts in, to take it out again; the lender rows tell how
// many lenders a cohort spans.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('benchmark_members', (t) => {
    t.string('verification_id', 40).primary().references('id').inTable('verifications').onDelete('CASCADE');
    t.string('lender_id', 40).notNullable();
    t.string('product_type', 40).notNullable();
    t.text('buckets').notNullable();
  });
  await knex.schema.createTable('benchmark_buckets', (t) => {
    t.string('product_type', 40).notNullable();
    t.string('metric', 60).notNullable();
    t.integer('bucket').notNullable();
    t.integer('tapes').notNullable();
    t.primary(['product_type', 'metric', 'bucket']);
  });
  await knex.schema.createTable('benchmark_lenders', (t) => {
    t.string('product_type', 40).notNullable();
    t.string('lender_id', 40).notNullable();
    t.integer('tapes').notNullable();
    t.primary(['product_type', 'lender_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['benchmark_lenders', 'benchmark_buckets', 'benchmark_members']) await knex.schema.dropTable(table);
}
