import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { peerBenchmark, type PeerBenchmarkDeps } from '../peer-benchmark.ts';

export function getBenchmark(deps: PeerBenchmarkDeps): OperationHandler<'getBenchmark'> {
  return async (request) => ({ status: 200, body: await peerBenchmark(deps, principalOf(request).lender.id, request.params.verification_id) });
}
