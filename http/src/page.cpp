// The web page served at "/": one self-contained document, inline CSS and JS, no external
// assets. Every value from a message is put into the DOM with textContent (never innerHTML);
// message HTML is shown only inside <iframe sandbox> via srcdoc (no scripts, unique origin).
#include "inlet/http/api.hpp"

namespace inlet::http {
namespace {

constexpr std::string_view page = R"PAGE(<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>inlet</title>
<style>
*{box-sizing:border-box}body{margin:0;font:14px/1.4 system-ui,sans-serif;color:#222;background:#f6f7f9}
header{display:flex;gap:.5em;align-items:center;padding:.6em 1em;background:#1f2a44;color:#fff;flex-wrap:wrap}
header h1{font-size:1.1em;margin:0 1em 0 0}header input{flex:1;min-width:12em;padding:.35em;border:0;border-radius:3px}
button{padding:.35em .8em;border:1px solid #999;border-radius:3px;background:#fff;cursor:pointer}
button.danger{border-color:#b33;color:#b33}#live{font-size:.85em;opacity:.85}
main{display:flex;height:calc(100vh - 3.2em)}#list{width:42%;min-width:20em;overflow:auto;border-right:1px solid #ccc;background:#fff}
#detail{flex:1;overflow:auto;padding:1em}table{width:100%;border-collapse:collapse}
td,th{padding:.4em .6em;border-bottom:1px solid #eee;text-align:left;vertical-align:top;overflow-wrap:anywhere}
tr.msg{cursor:pointer}tr.msg:hover{background:#eef3ff}tr.sel{background:#dde7ff}
.sub{font-weight:400}tr.unread .sub{font-weight:700}tr.unread td:first-child{box-shadow:inset 3px 0 #36c}.muted{color:#777;font-size:.85em}#pager{display:flex;gap:.5em;align-items:center;padding:.5em}.tag{display:inline-block;font-size:.75em;font-weight:400;background:#e8ecf8;color:#234;border-radius:3px;padding:0 .35em;margin-left:.35em}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:0 0 1em}dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#fff;border:1px solid #ddd;padding:.8em}
iframe{width:100%;height:60vh;border:1px solid #ddd;background:#fff}.tabs{display:flex;gap:.4em;margin:.5em 0}
.tabs button.on{background:#1f2a44;color:#fff}
</style></head><body>
<header><h1>inlet</h1>
<input id="box" placeholder="mailbox address, e.g. someone@example.com (empty: all)" autocomplete="off">
<button id="go">Show</button><button id="all">All</button>
<button id="readall">Mark shown read</button><button id="delall" class="danger">Delete shown</button><span id="live">connecting…</span></header>
<main><section id="list"><div id="pager"><button id="prev">‹ Newer</button><span id="range" class="muted"></span><button id="next">Older ›</button></div>
<table><thead><tr><th>From</th><th>Subject</th><th>Received</th></tr></thead><tbody id="rows"></tbody></table></section>
<section id="detail"><p class="muted">Select a message.</p></section></main>
<script>
"use strict";
const $=id=>document.getElementById(id);
const LIMIT=50;let start=0,mailbox="",selected="",shownIds=[];
function el(tag,text,cls){const e=document.createElement(tag);if(text!==undefined&&text!==null)e.textContent=String(text);if(cls)e.className=cls;return e;}
function addr(a){if(!a)return"";return a.Name?a.Name+" <"+a.Address+">":a.Address||"";}
function addrs(l){return(l||[]).map(addr).join(", ");}
function when(s){const d=new Date(s);return isNaN(d)?String(s||""):d.toLocaleString();}
function size(n){return n<1024?n+" B":n<1048576?(n/1024).toFixed(1)+" KB":(n/1048576).toFixed(1)+" MB";}
function listUrl(){const q="?start="+start+"&limit="+LIMIT;return mailbox?"api/v1/mailbox/"+encodeURIComponent(mailbox)+q:"api/v1/messages"+q;}
async function getJSON(u){const r=await fetch(u,{cache:"no-store"});if(!r.ok)throw new Error(r.status+" "+r.statusText);return r.json();}
async function refresh(){
  let d;try{d=await getJSON(listUrl());}catch(e){$("range").textContent="error: "+e.message;return;}
  const rows=$("rows");rows.replaceChildren();shownIds=[];
  for(const m of d.messages||[]){
    shownIds.push(m.ID);const tr=el("tr",null,"msg"+(m.Read?"":" unread")+(m.ID===selected?" sel":""));
    const f=el("td",addr(m.From));tr.appendChild(f);
    const s=el("td");const sub=el("div",m.Subject||"(no subject)","sub");for(const t of m.Tags||[])sub.appendChild(el("span",t,"tag"));s.appendChild(sub);s.appendChild(el("div",m.Snippet||"","muted"));tr.appendChild(s);
    const c=el("td",when(m.Created));c.appendChild(el("div",size(m.Size),"muted"));tr.appendChild(c);
    tr.addEventListener("click",()=>openMsg(m.ID));rows.appendChild(tr);}
  const n=(d.messages||[]).length;
  $("range").textContent=(n?(d.start+1)+"–"+(d.start+n):"0")+" of "+d.total+(mailbox?" for "+mailbox:"")+(d.unread?", "+d.unread+" unread":"");
  $("prev").disabled=start===0;$("next").disabled=d.start+n>=d.total;}
function row(dl,k,v){if(v===undefined||v===null||v==="")return;dl.appendChild(el("dt",k));dl.appendChild(el("dd",v));}
async function openMsg(id){
  selected=id;const box=$("detail");box.replaceChildren(el("p","Loading…","muted"));
  let m;try{m=await getJSON("api/v1/message/"+encodeURIComponent(id));}catch(e){box.replaceChildren(el("p","error: "+e.message));return;}
  box.replaceChildren();box.appendChild(el("h2",m.Subject||"(no subject)"));
  const dl=el("dl");row(dl,"From",addr(m.From));row(dl,"To",addrs(m.To));row(dl,"Cc",addrs(m.Cc));
  row(dl,"Reply-To",addrs(m.ReplyTo));row(dl,"Date",m.Date?when(m.Date):"");row(dl,"Received",when(m.Created));
  row(dl,"Message-ID",m.MessageID);row(dl,"Size",size(m.Size));row(dl,"Tags",(m.Tags||[]).join(", "));
  if(m.Envelope){row(dl,"Envelope from",m.Envelope.From||"<>");row(dl,"Envelope to",(m.Envelope.To||[]).join(", "));row(dl,"HELO",m.Envelope.Helo);row(dl,"Remote",m.Envelope.Remote);}
  if(m.Attachments&&m.Attachments.length)row(dl,"Attachments",m.Attachments.map(a=>(a.FileName||"(unnamed)")+" ("+a.ContentType+", "+size(a.Size)+")").join("; "));
  box.appendChild(dl);
  const tabs=el("div",null,"tabs"),view=el("div");
  const show=(which)=>{for(const b of tabs.children)b.classList.toggle("on",b.dataset.t===which);view.replaceChildren();
    if(which==="html"){const f=document.createElement("iframe");f.setAttribute("sandbox","");f.setAttribute("referrerpolicy","no-referrer");f.srcdoc=m.HTML||"";view.appendChild(f);}
    else view.appendChild(el("pre",m.Text||"(no text part)"));};
  for(const [t,label] of [["text","Text"],["html","HTML"]]){const b=el("button",label);b.dataset.t=t;b.addEventListener("click",()=>show(t));tabs.appendChild(b);}
  const raw=el("a","Raw");raw.href="api/v1/message/"+encodeURIComponent(m.ID)+"/raw";raw.target="_blank";raw.rel="noopener noreferrer";tabs.appendChild(raw);
  const del=el("button","Delete","danger");del.addEventListener("click",async()=>{await fetch("api/v1/messages",{method:"DELETE",headers:{"Content-Type":"application/json"},body:JSON.stringify({IDs:[m.ID]})});selected="";$("detail").replaceChildren(el("p","Deleted.","muted"));refresh();});
  tabs.appendChild(del);box.appendChild(tabs);box.appendChild(view);show(m.HTML&&!m.Text?"html":"text");refresh();}
function setMailbox(v){mailbox=v.trim();start=0;$("box").value=mailbox;history.replaceState(null,"",mailbox?"#"+encodeURIComponent(mailbox):location.pathname);refresh();}
$("go").addEventListener("click",()=>setMailbox($("box").value));
$("box").addEventListener("keydown",e=>{if(e.key==="Enter")setMailbox($("box").value);});
$("all").addEventListener("click",()=>setMailbox(""));
$("prev").addEventListener("click",()=>{start=Math.max(0,start-LIMIT);refresh();});
$("next").addEventListener("click",()=>{start+=LIMIT;refresh();});
$("readall").addEventListener("click",async()=>{
  if(!shownIds.length)return;
  await fetch("api/v1/messages",{method:"PUT",headers:{"Content-Type":"application/json"},body:JSON.stringify({IDs:shownIds,Read:true})});refresh();});
$("delall").addEventListener("click",async()=>{
  if(!shownIds.length)return;
  if(!confirm(mailbox?"Delete the "+shownIds.length+" messages shown for "+mailbox+"?":"Delete the "+shownIds.length+" messages shown?"))return;
  await fetch("api/v1/messages",{method:"DELETE",headers:{"Content-Type":"application/json"},body:JSON.stringify({IDs:shownIds})});start=0;refresh();});
let poll=null;
function startPolling(){if(!poll){poll=setInterval(refresh,5000);$("live").textContent="polling every 5 s";}}
function live(){
  if(!window.EventSource){startPolling();return;}
  const es=new EventSource("api/events");
  es.addEventListener("open",()=>{$("live").textContent="live";if(poll){clearInterval(poll);poll=null;}});
  es.addEventListener("new",()=>{if(start===0)refresh();});
  let soon=null;for(const t of ["delete","update","prune"])es.addEventListener(t,()=>{if(!soon)soon=setTimeout(()=>{soon=null;refresh();},150);});
  es.addEventListener("error",()=>{$("live").textContent="reconnecting…";startPolling();});}
try{mailbox=decodeURIComponent(location.hash.slice(1));}catch(e){mailbox="";}
$("box").value=mailbox;refresh();live();
</script></body></html>
)PAGE";

}  // namespace

std::string_view web_page() noexcept {
  return page;
}

}  // namespace inlet::http
