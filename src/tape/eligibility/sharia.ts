// Shared by murabaha and hpp: the Sharia screening overlay gates the advance (D20).
import type { Covenant, IslamicCompliance } from '../../../generated/tape.ts';
import type { Finding } from './types.ts';

export function shariaFindings(islamic: IslamicCompliance | undefined): Finding[] {
  if (islamic?.status === 'non_compliant')
    return [
      {
        code: 'SHARIA_NON_COMPLIANT',
        limit: 'ineligible',
        message: `Sharia screening by ${islamic.screening_provider} found the income non-compliant.`,
      },
    ];
  if (islamic?.status === 'pending')
    return [{ code: 'SHARIA_SCREENING_PENDING', limit: null, severity: 'warning', message: 'No Sharia screening verdict yet; see the covenant.' }];
  return [];
}

export function shariaCovenants(islamic: IslamicCompliance | undefined): Covenant[] {
  return islamic?.status === 'pending'
    ? [{ code: 'SHARIA_SCREENING_REQUIRED', description: 'Disburse only after a sharia_screening overlay reports the income compliant.' }]
    : [];
}
