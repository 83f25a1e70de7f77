import type { OperationHandler } from '../../platform/http/operation-handler.ts';
import type { TapeSigner } from '../tape-signer.ts';

/** Five minutes: verifiers refetch on an unknown kid, so a longer cache never hides a new key for good. */
const CACHE_CONTROL = 'public, max-age=300';

export function getTapeSigningKeys(signer: Pick<TapeSigner, 'publicKeys'>): OperationHandler<'getTapeSigningKeys'> {
  return async () => ({ status: 200, headers: { 'Cache-Control': CACHE_CONTROL }, body: { keys: await signer.publicKeys() } });
}
