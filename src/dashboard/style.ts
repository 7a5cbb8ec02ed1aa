/** The dashboard's only stylesheet, served by the Worker (no CDN). Mobile first; system fonts. */
export const CSS = `
:root{--fg:#1b1f24;--muted:#57606a;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de;--accent:#0a58ca;--ok:#116329;--bad:#a40e26;--warn:#7d4e00;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
*{box-sizing:border-box}
body{margin:0;line-height:1.45}
a{color:var(--accent)}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible,summary:focus-visible{outline:3px solid #ffbf47;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:#fff;padding:8px;z-index:9}
header.top{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;padding:10px 16px;background:#24292f;color:#fff}
header.top a{color:#fff;text-decoration:none;font-weight:600}
header.top .who{margin-left:auto;display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center}
nav.tabs{display:flex;flex-wrap:wrap;gap:4px;padding:8px 16px;border-bottom:1px solid var(--line);background:var(--panel)}
nav.tabs a{padding:6px 10px;border-radius:6px;text-decoration:none}
nav.tabs a[aria-current=page]{background:var(--accent);color:#fff}
main{padding:16px;max-width:1200px;margin:0 auto}
h1{font-size:1.5rem;margin:.2em 0 .6em}h2{font-size:1.2rem;margin:1.4em 0 .5em}
.flash{padding:10px 12px;border-radius:6px;margin:0 0 12px}.flash.ok{background:#dafbe1;color:var(--ok)}.flash.error{background:#ffebe9;color:var(--bad)}.flash.testmode{background:#fff8c5;color:#3b2300;border:2px dashed #9a6700}
.secret{font-family:ui-monospace,monospace;background:#fff8c5;padding:8px;border-radius:6px;word-break:break-all}
form.grid{display:grid;grid-template-columns:1fr;gap:10px;max-width:760px}
@media(min-width:720px){form.grid .two{display:grid;grid-template-columns:1fr 1fr;gap:10px}}
label{display:block;font-weight:600;font-size:.92rem}
label .hint{font-weight:400;color:var(--muted)}
input,select,textarea{font:inherit;width:100%;padding:7px 9px;border:1px solid #8c959f;border-radius:6px;background:#fff;color:var(--fg)}
input[type=checkbox]{width:auto;margin-right:6px}
input[type=color]{height:38px;padding:2px}
textarea{min-height:80px}
fieldset{border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin:0}
legend{font-weight:700;padding:0 4px}
.row{display:flex;flex-wrap:wrap;gap:8px;align-items:end}.row>*{flex:1 1 160px}
button,.button{font:inherit;display:inline-block;padding:8px 14px;border-radius:6px;border:1px solid #1f6feb;background:var(--accent);color:#fff;cursor:pointer;text-decoration:none}
button.secondary{background:#fff;color:var(--accent)}button.danger{background:var(--bad);border-color:var(--bad)}
.table-wrap{overflow-x:auto;border:1px solid var(--line);border-radius:8px;margin:8px 0}
table{border-collapse:collapse;width:100%;font-size:.92rem}
th,td{text-align:left;padding:7px 9px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--panel);white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,.mono{font-family:ui-monospace,monospace;font-size:.88em;word-break:break-all}
.status{display:inline-block;padding:1px 8px;border-radius:999px;font-size:.82rem;font-weight:600;background:#eaeef2}
.status.Approved,.status.delivered{background:#dafbe1;color:var(--ok)}.status.Suspicious,.status.failed,.status.dead_lettered,.status.Rejected{background:#ffebe9;color:var(--bad)}.status.UnderReview,.status.retrying,.status.pending{background:#fff8c5;color:var(--warn)}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(140px,1fr));gap:8px;margin:8px 0}
.card{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:10px}.card b{display:block;font-size:1.4rem}
dl.props{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px}dl.props dt{font-weight:600;color:var(--muted)}dl.props dd{margin:0;word-break:break-all}
.chart{width:100%;height:auto;max-width:900px;border:1px solid var(--line);border-radius:8px;background:#fff}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:.9rem}.legend span::before{content:"";display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px;background:var(--c)}
.pager{display:flex;gap:12px;margin:8px 0}
.muted{color:var(--muted)}
.field-error{color:var(--bad);margin:4px 0 0;font-weight:600;font-size:.92rem}.invalid input,.invalid textarea,.invalid select{border:2px solid var(--bad)}
.login{max-width:420px;margin:10vh auto}
.builder-layout{display:grid;grid-template-columns:1fr;gap:16px}
@media(min-width:1100px){.builder-layout{grid-template-columns:minmax(0,700px) minmax(0,1fr)}.builder-layout .preview{position:sticky;top:8px;align-self:start;max-height:100vh;overflow:auto}}
.builder-section{display:grid;gap:10px;border-top:1px solid var(--line);padding-top:4px}
nav.sections{display:flex;flex-wrap:wrap;gap:6px 14px}
.sentence{font-weight:600;margin:0}
.field-error{color:var(--bad);font-weight:600;margin:4px 0 0}
.invalid input,.invalid select,.invalid textarea{border:2px solid var(--bad)}
.builder .hint{display:block;font-size:.85rem;color:var(--muted)}
.flash.warn{background:#fff8c5;color:#3b2300}.summary h2,.flash.warn h2{margin-top:0;font-size:1.05rem}
label.inline{display:inline;font-weight:400}
.preview-page,.preview-widget{height:520px;border:1px solid var(--line);border-radius:8px;background:#fff}
.preview-page{width:100%}.preview-widget{width:340px;max-width:100%}
`;
