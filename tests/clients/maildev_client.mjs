// The npm `cypress-maildev` commands (MailDev's Cypress helpers, calling MailDev 2.x's
// REST paths: /email, /email/{id}, /email/all, /healthz) driven as its README shows,
// against an inletd started with MailDev's variables. Exits non-zero on the first
// difference; the Python harness (catcher_clients_test.py) sends the mail first.
//
// Cypress itself (an Electron app with a browser download) is not installed: the package
// registers its commands on the `Cypress` global and calls `cy.request(...).its('body')`,
// so this script gives it the little of Cypress it touches: `Cypress.expose` (its
// settings), `Cypress.Commands.add`, and `cy.request` / `cy.wrap` as chainables over
// fetch, failing on a 4xx/5xx as cy.request does by default. Everything the package
// does itself (URLs, methods, picking the last message, the subject and recipient search,
// the OTP regexp) runs as shipped. maildevVisitMessageById needs a browser (cy.visit):
// not driven.
//
//     node maildev_client.mjs WEB_PORT
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

const settings = { MAILDEV_PROTOCOL: 'http', MAILDEV_HOST: '127.0.0.1', MAILDEV_API_PORT: process.argv[2] }
const commands = {}
const calls = []

// A Cypress chainable: thenable, with .its(name).
function chain(promise) {
  return {
    then: (ok, bad) => chain(promise.then(ok, bad)),
    its: (name) => chain(promise.then((v) => v[name])),
  }
}

globalThis.Cypress = {
  expose: (name) => settings[name],
  Commands: { add: (name, fn) => { commands[name] = fn } },
}
globalThis.cy = {
  wrap: (v) => chain(Promise.resolve(v)),
  request: (opts) => chain((async () => {
    calls.push(`${opts.method} ${new URL(opts.url).pathname}`)
    const res = await fetch(opts.url, {
      method: opts.method,
      headers: opts.headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    })
    const text = await res.text()
    if (res.status >= 400) throw new Error(`cy.request ${opts.method} ${opts.url}: ${res.status} ${text}`)
    const json = (res.headers.get('content-type') || '').includes('json')
    return { status: res.status, headers: Object.fromEntries(res.headers), body: json ? JSON.parse(text) : text }
  })()),
}

// The README's step 1: `require('cypress-maildev')` registers the commands.
const require = createRequire(import.meta.url)
require('cypress-maildev')
for (const name of ['maildevGetAllMessages', 'maildevGetLastMessage', 'maildevGetMessageById',
  'maildevGetMessageBySubject', 'maildevGetMessageBySentTo', 'maildevDeleteMessageById',
  'maildevGetOTPCode', 'maildevDeleteAllMessages', 'maildevHealthcheck']) {
  assert.equal(typeof commands[name], 'function', `${name} registered`)
}
const c = commands

assert.equal(await c.maildevHealthcheck(), true)

const all = await c.maildevGetAllMessages()
assert.equal(all.length, 4)
assert.deepEqual(all.map((m) => m.subject),
  ['First: Grüße', 'Second: html', 'Third: attachment', 'Your code'])  // arrival order

const last = await c.maildevGetLastMessage()
assert.equal(last.subject, 'Your code')
// The README's example: the OTP out of the newest message's text.
assert.equal(await c.maildevGetMessageBySubject('Your code').then((m) => c.maildevGetOTPCode(m.text)),
  '482913')

const html = await c.maildevGetMessageBySubject('Second: html')
assert.match(html.html, /<b>bold<\/b>/)
assert.equal(await c.maildevGetMessageBySubject('no such subject'), null)

const toBob = await c.maildevGetMessageBySentTo('bob@example.com')  // the last one to bob
assert.equal(toBob.subject, 'Third: attachment')
assert.equal(toBob.attachments[0].filename, 'notes.txt')
assert.equal(await c.maildevGetMessageBySentTo('nobody@example.com'), null)

const first = await c.maildevGetMessageById(all[0].id)
assert.equal(first.subject, 'First: Grüße')
assert.match(first.text, /caf\u00e9 au lait/)
assert.deepEqual(first.from, [{ address: 'ann@example.org', name: 'Ann' }])
assert.equal(first.read, true)  // opening marks it read, as MailDev does
assert.equal((await c.maildevGetAllMessages())[0].read, true)

assert.equal(await c.maildevDeleteMessageById(all[0].id), true)
assert.equal((await c.maildevGetAllMessages()).length, 3)
await assert.rejects(Promise.resolve(c.maildevGetMessageById(all[0].id)), /404/)

assert.equal(await c.maildevDeleteAllMessages(), true)
assert.deepEqual(await c.maildevGetAllMessages(), [])

assert.deepEqual(calls.filter((x, i) => calls.indexOf(x) === i).map((x) => x.replace(/\/email\/(?!all$)[^/]+$/, '/email/{id}')).sort(),
  ['DELETE /email/all', 'DELETE /email/{id}', 'GET /email', 'GET /email/{id}', 'GET /healthz'].sort())
console.log('every call answered')
