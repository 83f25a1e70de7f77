import type { RequestHandler } from 'express';
import { DomainError } from '../../platform/domain-error.ts';
import { SCHEMA_VERSIONS, type SchemaVersion } from '../../tape/index.ts';
import { one, param, viewerOf, type Dashboard } from './context.ts';
import { tapeIdOf } from './verification-detail.ts';

/** The tape as a JSON file, at the schema version asked for, the latest unless `tape_id` names an earlier one. */
export function tapeDownload({ deps }: Dashboard): RequestHandler {
  return async (req, res) => {
    const version = one(req.query.schema_version) ?? '2.0.0';
    if (!(SCHEMA_VERSIONS as readonly string[]).includes(version)) throw new DomainError('invalid', `There is no tape schema version "${version}".`);
    const tapeId = tapeIdOf(req);
    const { tape } = await deps.lifecycle.tapeResponseForLender(viewerOf(res).lender.id, param(req, 'id'), version as SchemaVersion, tapeId);
    res.setHeader('Content-Disposition', `attachment; filename="risk-tape-${tape.verification_id}${tapeId ? `-${tapeId}` : ''}-${version}.json"`);
    res.setHeader('Cache-Control', 'no-store');
    return res.type('application/json').send(JSON.stringify(tape, null, 2));
  };
}
