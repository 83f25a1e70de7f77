import type { Knex } from 'knex';

// GET /verifications lists a lender's verifications newest first, filtered by one of status,
// obligor reference or product type, and pages by the keyset (created_at, id). One index per filter
// ends in (created_at, id), so every page is a range read of one index in list order: no scan of
// the lender's rows and no sort, however many there are. The obligor index replaces the one of
// migration 002 (a prefix of it), which a data-protection lookup by obligor also uses.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('verifications', (t) => {
    t.index(['lender_id', 'created_at', 'id'], 'verifications_list_idx');
    t.index(['lender_id', 'status', 'created_at', 'id'], 'verifications_list_status_idx');
    t.index(['lender_id', 'obligor_reference', 'created_at', 'id'], 'verifications_list_obligor_idx');
    t.index(['lender_id', 'product_type', 'created_at', 'id'], 'verifications_list_product_idx');
    t.dropIndex(['lender_id', 'obligor_reference']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('verifications', (t) => {
    t.index(['lender_id', 'obligor_reference']);
    t.dropIndex(['lender_id', 'created_at', 'id'], 'verifications_list_idx');
    t.dropIndex(['lender_id', 'status', 'created_at', 'id'], 'verifications_list_status_idx');
    t.dropIndex(['lender_id', 'obligor_reference', 'created_at', 'id'], 'verifications_list_obligor_idx');
    t.dropIndex(['lender_id', 'product_type', 'created_at', 'id'], 'verifications_list_product_idx');
  });
}
