import type { components } from '../../generated/api.ts';

type Processing = components['schemas']['GdprProcessing'];

/**
 * What the access report says about why and how long the creator's data is held (GDPR articles
 * 13 to 15). The periods are the service's own: keep them in step with docs/data-protection.md.
 */
export function processingNotice(lenderName: string): Processing {
  return {
    controller: lenderName,
    processor: "Creator Income Verification Service, processing on the lender's behalf under its data-processing agreement",
    purposes: [
      {
        purpose: "Verify the creator's platform income for the lender's credit decision, with the creator's consent",
        data: ['obligor reference', 'platform account id and email', 'monthly income per platform', 'Risk Tape'],
        legal_basis: 'consent (GDPR article 6(1)(a)) given on the consent page',
      },
      {
        purpose: 'Tell the lender when the verification changes state',
        data: ['webhook events and their delivery records'],
        legal_basis: "performance of the lender's contract with the creator (GDPR article 6(1)(b))",
      },
      {
        purpose: 'Read income from the connected platforms, read-only',
        data: ['OAuth access and refresh tokens, encrypted, never shown'],
        legal_basis: 'consent (GDPR article 6(1)(a))',
      },
      {
        purpose:
          'Ongoing monitoring, when the lender asked for it and the creator agreed on the consent page: read the income again once a month for the months agreed, and give the lender each new Risk Tape; the creator can stop it at any time from the consent link',
        data: ['monthly income per platform', 'each Risk Tape, the earlier ones kept as its history'],
        legal_basis: 'consent (GDPR article 6(1)(a)) given on the consent page for that period',
      },
    ],
    retention: [
      { data: 'verifications, tapes, income and events', period: 'until the lender or the creator asks for erasure (POST /api/v1/gdpr/erase)' },
      { data: 'consent link', period: '7 days, then the verification expires' },
      {
        data: 'OAuth tokens',
        period: 'until erasure, or until ongoing monitoring ends, when the grant is also revoked at the platform',
      },
      { data: 'earlier Risk Tapes of ongoing monitoring', period: 'with the verification, until erasure' },
      { data: 'stored answers of idempotent creation requests', period: 'with the verification; the Idempotency-Key itself can be reused after 24 hours' },
    ],
  };
}
