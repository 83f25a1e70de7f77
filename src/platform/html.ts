// What the service's server-rendered pages share (the creator's consent pages and the lender
// dashboard): escaping and the base look. No JavaScript, no third-party assets: every page works
// with forms and links alone. Plain strings, no HTTP: the pages themselves are built outside http/.

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Every value put into a page goes through this, in text and in attribute values alike. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);

/** The look of every page: type, colours (contrast checked by axe-core in the browser tests), forms and focus. */
export const BASE_CSS = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans Arabic", Tahoma, sans-serif; line-height: 1.5; }
body { margin: 0; background: #f6f7f9; color: #1a1d21; }
main, footer { max-width: 42rem; margin: 0 auto; padding: 2rem 1.25rem; background: #fff; box-sizing: border-box; }
main { padding-bottom: 2.5rem; }
footer { padding-top: 1rem; border-top: 1px solid #c4c9d0; color: #3d434b; font-size: .95rem; }
h1 { font-size: 1.6rem; line-height: 1.25; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin-top: 2rem; }
h3 { font-size: 1.05rem; margin: 0 0 .25rem; }
p, li { overflow-wrap: anywhere; }
.hint { color: #3d434b; font-size: .95rem; }
.notice { background: #e8f1fb; border-inline-start: 4px solid #0b5cad; padding: .5rem .75rem; }
button { font: inherit; font-weight: 600; color: #fff; background: #0b5cad; border: 2px solid #0b5cad; border-radius: .375rem; padding: .55rem 1.1rem; cursor: pointer; margin-block: .25rem; }
button.secondary { color: #0b5cad; background: #fff; margin-inline-start: .5rem; }
button.danger { background: #a4262c; border-color: #a4262c; }
button[disabled] { color: #3d434b; background: #e2e5e9; border-color: #8a919a; cursor: not-allowed; }
button:focus-visible, a:focus-visible, input:focus-visible, select:focus-visible { outline: 3px solid #b35c00; outline-offset: 2px; }
a { color: #0b5cad; }
`;
