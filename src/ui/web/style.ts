// The dashboard's stylesheet, after the report's (report/css.ts: its palette variables, light and dark,
// tables, badges, figures). What is added: the top bar, forms, the live marker, the turn view, the
// FrozenLake board, chat bubbles, token chips and the group's lanes. Every colour is a variable of the
// report's palette or a chart colour, so dark mode (prefers-color-scheme) follows without a rule here.
const CSS = `
body{max-width:80rem;padding:0 1rem 3rem}
header.top{display:flex;flex-wrap:wrap;align-items:center;gap:.4rem 1.25rem;padding:.6rem 0;margin-bottom:1rem;
border-bottom:1px solid var(--rule)}
header.top .brand{font-weight:700;color:var(--fg);text-decoration:none}
header.top nav a{margin-right:.9rem}
#status{color:var(--muted);font-size:.9rem;margin-left:auto}
#status.error{color:var(--not-fg)}
h1{font-size:1.5rem;overflow-wrap:anywhere}
h2{margin-top:2rem}
.meta{color:var(--muted);margin:.2rem 0 1rem}
.meta>span{margin-right:1rem;display:inline-block}
.muted{color:var(--muted)}
.nowrap{white-space:nowrap}
.error-box{border:1px solid var(--not-fg);background:var(--not-bg);color:var(--not-fg);padding:.6rem .8rem;border-radius:6px}
form.filters,.controls{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:flex-end;margin:.75rem 0}
form.filters label,.controls label{display:flex;flex-direction:column;font-size:.85rem;color:var(--muted);gap:.15rem}
input,select,button{font:inherit;font-size:.95rem;color:var(--fg);background:var(--bg);border:1px solid var(--rule);
border-radius:5px;padding:.25rem .45rem}
input[type=number]{width:6.5rem}
input[type=checkbox]{padding:0}
button{cursor:pointer;background:var(--panel)}
button:focus-visible,input:focus-visible,select:focus-visible,a:focus-visible{outline:2px solid var(--link);outline-offset:1px}
fieldset{border:1px solid var(--rule);border-radius:6px;padding:.35rem .7rem;margin:0}
fieldset label{flex-direction:row!important;align-items:center;gap:.3rem!important;display:inline-flex!important;
margin-right:.7rem;color:var(--fg)!important;font-size:.9rem!important}
legend{font-size:.85rem;color:var(--muted)}
.pager{display:flex;gap:.75rem;align-items:center;margin:.5rem 0}
.live{display:inline-flex;align-items:center;gap:.35rem;font-weight:600;color:var(--held-fg)}
.live::before{content:"";width:.6rem;height:.6rem;border-radius:50%;background:currentColor;animation:pulse 1.2s infinite}
@keyframes pulse{50%{opacity:.25}}
@media (prefers-reduced-motion:reduce){.live::before{animation:none}}
.status-stopped,.status-incomplete{color:var(--part-fg)}
.status-finished{color:var(--muted)}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,560px),1fr));gap:.5rem 1.5rem}
.charts figure{margin:.5rem 0}
.charts figcaption{margin-top:.2rem}
.scroll{overflow-x:auto;max-width:100%}
table.turns{margin:.5rem 0}
table.turns tr{cursor:pointer}
table.turns tr.current td{background:var(--panel);font-weight:600}
table.turns tr.match td:first-child{box-shadow:inset 3px 0 var(--link)}
td.forced,span.forced{color:var(--part-fg)}
.turn-view{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem 1.5rem;margin:1rem 0;
padding:.75rem;border:1px solid var(--rule);border-radius:8px}
@media (max-width:760px){.turn-view{grid-template-columns:minmax(0,1fr)}}
.turn-view h3{margin:0 0 .5rem;font-size:1rem}
.turnbar{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center}
.board{display:inline-grid;gap:2px;margin:.25rem 0}
.board .cell{width:2.4rem;height:2.4rem;display:flex;align-items:center;justify-content:center;border-radius:4px;
font-size:.8rem;position:relative;background:#cfe8f7;color:#0b3954}
.board .cell.H{background:#23395b;color:#e6e9ed}
.board .cell.G{background:#e9c46a;color:#3b2f00}
.board .cell.S{background:#b8d8c8;color:#0d3b29}
.board .cell.path{box-shadow:inset 0 0 0 3px #D55E00}
.board .cell .agent{position:absolute;inset:18%;border-radius:50%;background:#D55E00;color:#fff;display:flex;
align-items:center;justify-content:center;font-weight:700}
@media (prefers-color-scheme:dark){.board .cell{background:#3a6b8a;color:#f0f6fa}.board .cell.H{background:#0b1320;color:#9aa5b1}
.board .cell.G{background:#b08a1e;color:#fff}.board .cell.S{background:#2f6b52;color:#fff}}
.chat{display:flex;flex-direction:column;gap:.5rem;max-height:32rem;overflow:auto}
.msg{border:1px solid var(--rule);border-radius:8px;padding:.4rem .6rem;background:var(--bg)}
.msg .who{font-size:.8rem;color:var(--muted);font-weight:600;text-transform:uppercase;letter-spacing:.03em}
.msg.assistant{border-left:4px solid #0072B2}
.msg.tool{border-left:4px solid #009E73}
.msg.tool.failed{border-left-color:#D55E00}
.msg.current{outline:2px solid var(--link)}
.msg td{overflow-wrap:anywhere}
.msg pre,.turn-view pre{white-space:pre-wrap;overflow-wrap:anywhere;max-height:18rem}
.tokens{display:flex;flex-wrap:wrap;gap:2px;margin:.3rem 0;font:.78rem/1.3 ui-monospace,Menlo,Consolas,monospace}
.tokens span{padding:.05rem .25rem;border-radius:3px;white-space:pre}
.tokens span.special{font-style:italic;box-shadow:inset 0 0 0 1px currentColor}
#diagnostics h3{font-size:1rem;margin:1.25rem 0 .3rem}
dl.kv.small{font-size:.9rem;margin:.4rem 0}
.lanes{overflow-x:auto;padding-bottom:.5rem;max-width:100%}
.lane{display:flex;align-items:stretch;gap:2px;margin:2px 0}
.lane .label{flex:0 0 7.5rem;position:sticky;left:0;background:var(--bg);font-size:.85rem;padding-right:.4rem;
display:flex;flex-direction:column;justify-content:center;z-index:1}
.lane a.step{text-decoration:none}
.lane .step{flex:0 0 2.6rem;height:2.3rem;display:flex;align-items:center;justify-content:center;border-radius:3px;
font-size:.8rem;border:1px solid transparent;position:relative}
.lane .step.forced{border:2px dashed currentColor}
.lane .step.split{box-shadow:inset 2px 0 0 #000,inset 4px 0 0 #fff}
.lane .step.parts::after{content:"◆";position:absolute;top:-.1rem;right:.05rem;font-size:.6rem}
.lane .end{flex:0 0 auto;padding:0 .4rem;display:flex;align-items:center;font-size:.85rem}
.lane.axis .step{height:1.3rem;color:var(--muted)}
.swatches{display:flex;flex-wrap:wrap;gap:.35rem 1rem;align-items:center;font-size:.85rem;color:var(--muted)}
.swatches span.sw{display:inline-block;width:1.6rem;height:.9rem;border-radius:2px;vertical-align:middle;margin-right:.25rem}
.kbd{font:.8rem ui-monospace,Menlo,monospace;border:1px solid var(--rule);border-radius:3px;padding:0 .3rem;background:var(--panel)}
`;

export const UI_CSS = CSS.trim().replace(/\n/g, '');
