import ipaddr from 'ipaddr.js';

/** Parses CIDR ranges (a bare address means a single host); throws with the offending entry. */
export function parseAllowlist(entries: string[]): string[] {
  return entries.map((entry) => {
    const text = entry.trim();
    try {
      if (text.includes('/')) {
        const [address, prefix] = ipaddr.parseCIDR(text);
        return `${address.toString()}/${prefix}`;
      }
      const address = ipaddr.parse(text);
      return `${address.toString()}/${address.kind() === 'ipv4' ? 32 : 128}`;
    } catch {
      throw new Error(`"${text}" is not an IP address or CIDR range`);
    }
  });
}

/** An empty allowlist allows every address (D10). IPv4-mapped IPv6 clients match IPv4 ranges. */
export function isAllowed(clientAddress: string | undefined, allowlist: string[]): boolean {
  if (allowlist.length === 0) return true;
  if (!clientAddress || !ipaddr.isValid(clientAddress)) return false;
  const client = ipaddr.process(clientAddress);
  return allowlist.some((cidr) => {
    const [range, prefix] = ipaddr.parseCIDR(cidr);
    return client.kind() === range.kind() && client.match(range, prefix);
  });
}
