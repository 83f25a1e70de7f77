import type { Knex } from 'knex';

// The webhooks feature keeps its own copy of each event it has deliveries for: the exact bytes that
// are signed and sent, so the sender reads only webhook tables. Erasing the verification's event
// erases this copy too (cascade).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_events', (t) => {
    t.string('event_id', 40).primary().references('id').inTable('events').onDelete('CASCADE');
    t.string('lender_id', 40).notNullable();
    t.text('body').notNullable();
  });
  await knex.raw(
    `insert into webhook_events (event_id, lender_id, body)
     select e.id, e.lender_id, e.payload from events e where e.id in (select event_id from webhook_deliveries)`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_events');
}
