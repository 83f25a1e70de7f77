/**
 * Runs `work` while scraping a metrics endpoint every second, as a Prometheus server set to 1 s
 * would (15 s is usual), and fails when no scrape succeeded: metrics measured but never served would
 * make their cost look smaller than it is. Without a URL, `work` runs alone.
 */
export async function whileScraped<T>(url: string | null, token: string, work: () => Promise<T>): Promise<T> {
  if (!url) return work();
  let scrapes = 0;
  const scraper = setInterval(() => {
    void fetch(url, { headers: { authorization: `Bearer ${token}` } })
      .then(async (response) => {
        await response.text();
        if (response.ok) scrapes++;
      })
      .catch(() => undefined);
  }, 1000);
  let result: T;
  try {
    result = await work();
  } finally {
    clearInterval(scraper);
  }
  if (scrapes === 0) throw new Error(`the metrics endpoint ${url} was never scraped successfully`);
  return result;
}
