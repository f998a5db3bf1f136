// om-bench conformance: drive the real @mastra/memory 1.31.0 (with @mastra/core 1.68.0, its own devDependency) on
// one LongMemEval question, replayed as Mastra's runner replays it (see ../mastra-1.1.0/driver.mjs: same replay,
// same outputs). OM is configured through `new Memory({options: {observationalMemory}})` on the Agent, 1.31.0's
// public API; obscureThreadIds and onDebugEvent, which Memory does not forward, are set on the engine it builds.
//
//   TZ=UTC node conformance/mastra-1.31.0/driver.mjs --data q.json --out DIR --base http://127.0.0.1:PORT/v1 \
//       --message-tokens 2000 --observation-tokens 600 --mode single --dates metadata --clock frozen [flags]
//
// --mode single: prepare.ts verbatim, one agent step per pair (1.31.0 observes at step 0 too; core 1.68 refuses
//                the two-step mock's empty "other" step)
// --scope thread --one-thread: every pair into one thread t_<qid> and the question asked on it (thread scope:
//                async buffering on with Mastra's defaults); --buffer-tokens N|false overrides bufferTokens
// Flags that switch off a Mastra-side behaviour, so the rest can be compared (conformance/run.py names each):
// --tiktoken:    count tokens with js-tiktoken o200k_base (as 1.1.0 did) instead of 1.31.0's tokenx estimate;
//                om_core counts exact o200k by a documented choice
// --own-thread-history: in resource scope 1.31.0's Memory.getContext loads every unobserved message of the
//                resource as the Actor's history, counts them twice and observes them under the current thread;
//                keep only the current thread's messages, as 1.1.0 did
// --nowriter:    the OM processor gets no stream writer
import { readFileSync, writeFileSync, mkdirSync, appendFileSync } from 'node:fs';

// --clock frozen: `new Date()` / Date.now() return a chosen instant (the replayed message's time), as if the
// conversation were live; installed before Mastra is imported
const RealDate = Date;
let frozenAt = null;
class FakeDate extends RealDate {
  constructor(...a) {
    if (a.length === 0 && frozenAt !== null) super(frozenAt);
    else super(...a);
  }
  static now() {
    return frozenAt !== null ? frozenAt : RealDate.now();
  }
}
if (process.argv.includes('frozen')) globalThis.Date = FakeDate;

const { Agent } = await import('@mastra/core/agent');
const { InMemoryStore } = await import('@mastra/core/storage');
const { RequestContext } = await import('@mastra/core/request-context');
const { Memory } = await import('@mastra/memory');
const { TokenCounter } = await import('@mastra/memory/processors');
// --tiktoken (diagnostic): count with js-tiktoken o200k_base as 1.1.0 did (`encode(text, 'all')`) instead of
// 1.31.0's tokenx estimate, to separate the token estimator from everything else
if (process.argv.includes('--tiktoken')) {
  const { getEncoding } = await import('js-tiktoken');
  const enc = getEncoding('o200k_base');
  TokenCounter.prototype.countString = function (text) { return text ? enc.encode(text, 'all').length : 0; };
}
const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
}
const dataPath = arg('data');
const outDir = arg('out', 'runs/mastra');
const base = arg('base', 'http://127.0.0.1:18555/mastra/v1');
const messageTokens = Number(arg('message-tokens', '30000'));
const observationTokens = Number(arg('observation-tokens', '40000'));
const mode = arg('mode', 'twostep');
const scope = arg('scope', 'resource');
// top: createdAt on the ModelMessage itself, as prepare.ts wrote it (core 1.2.0 ignores it: wall-clock times);
// metadata: the same Date under metadata.createdAt, which core 1.2.0's MessageList does honour
const dates = arg('dates', 'metadata');
const clock = arg('clock', 'real');
mkdirSync(outDir, { recursive: true });
const eventsPath = `${outDir}/events.jsonl`;
writeFileSync(eventsPath, '');
writeFileSync(`${outDir}/actor_prompts.jsonl`, '');

const question = JSON.parse(readFileSync(dataPath, 'utf-8'));
// provider 'openai' and --om-model (default gpt-4o): 1.31.0 decides from `<provider>/<model>` whether to send a
// temperature, so the fake endpoint is named as the model whose request parameters are compared
const provider = createOpenAICompatible({ name: 'openai', baseURL: base, apiKey: 'not-a-key' });
const omModel = provider.chatModel(arg('om-model', 'gpt-4o'));

// ---- the prep Actor: an in-process mock (prepare.ts used MockLanguageModelV2 with empty content) ----------
let callsThisGenerate = 0;
let currentPair = -1;
// the prompt the prep Actor receives at step 0 of every pair (LanguageModelV2 prompt: system + messages)
function recordPrompt(prompt) {
  const msgs = (prompt ?? []).map(m => ({ role: m.role,
    content: typeof m.content === 'string' ? m.content : m.content.map(p => p.text ?? `[${p.type}]`).join('') }));
  appendFileSync(`${outDir}/actor_prompts.jsonl`, JSON.stringify({ pair: currentPair, messages: msgs }) + '\n');
}
let actorCalls = 0;
const mockActor = {
  specificationVersion: 'v2',
  provider: 'mock',
  modelId: 'mock-prep-actor',
  supportedUrls: {},
  async doGenerate(options) {
    if (callsThisGenerate === 0) recordPrompt(options?.prompt);
    const reason = mode === 'twostep' && callsThisGenerate++ === 0 ? 'other' : 'stop';
    actorCalls++;
    return { content: [], finishReason: reason, usage: { inputTokens: 10, outputTokens: 20, totalTokens: 30 }, warnings: [] };
  },
  async doStream(options) {
    if (callsThisGenerate === 0) recordPrompt(options?.prompt);
    const reason = mode === 'twostep' && callsThisGenerate++ === 0 ? 'other' : 'stop';
    actorCalls++;
    const stream = new ReadableStream({
      start(c) {
        c.enqueue({ type: 'stream-start', warnings: [] });
        c.enqueue({ type: 'response-metadata', id: `mock-${actorCalls}`, modelId: 'mock-prep-actor', timestamp: new Date(0) });
        c.enqueue({ type: 'finish', finishReason: reason, usage: { inputTokens: 10, outputTokens: 20, totalTokens: 30 } });
        c.close();
      },
    });
    return { stream };
  },
};

const store = new InMemoryStore();
const omStorage = await store.getStore('memory');
const oneThread = process.argv.includes('--one-thread');

const onDebugEvent = async event => {
  const e = { ...event };
  for (const k of Object.keys(e)) if (e[k] instanceof Date) e[k] = e[k].toISOString();
  if (Array.isArray(e.messages)) e.messages = e.messages.map(m => m.id);
  appendFileSync(eventsPath, JSON.stringify({ seqFed: fedCount, ...e }) + '\n');
};

// 1.31.0's Memory passes neither obscureThreadIds nor onDebugEvent to the engine it builds: set them on the
// engine once it exists (both are read per cycle). --nowriter: the processor gets no stream writer.
const nowriter = process.argv.includes('--nowriter');
const ownThreadHistory = process.argv.includes('--own-thread-history');
class OMMemory extends Memory {
  constructor(cfg, debug) { super(cfg); this._debug = debug; }
  async _initOMEngine() {
    const e = await super._initOMEngine();
    if (e) { e.shouldObscureThreadIds = true; if (this._debug) e.onDebugEvent = this._debug; }
    return e;
  }
  // --own-thread-history (diagnostic): in resource scope 1.31.0's Memory.getContext loads every unobserved message
  // of the resource (listMessagesByResourceId) as the Actor's history; keep only the current thread's, as 1.1.0 did
  async getContext(opts) {
    const res = await super.getContext(opts);
    if (ownThreadHistory && res?.messages) res.messages = res.messages.filter(m => !m.threadId || m.threadId === opts.threadId);
    return res;
  }
  async createOMProcessor(configured = [], context) {
    const p = await super.createOMProcessor(configured, context);
    if (!p || !nowriter) return p;
    const inStep = p.processInputStep.bind(p), outRes = p.processOutputResult.bind(p);
    p.processInputStep = args => inStep({ ...args, writer: undefined });
    p.processOutputResult = args => outRes({ ...args, writer: undefined });
    return p;
  }
}
const bufArg = arg('buffer-tokens', null);
const bufferTokens = bufArg === null ? undefined : bufArg === 'false' ? false : Number(bufArg);
function omOptions(mt, ot) {
  const observation = { model: omModel, messageTokens: mt };
  if (bufferTokens !== undefined) observation.bufferTokens = bufferTokens;
  return { scope, observation, reflection: { model: omModel, observationTokens: ot } };
}
const memory = new OMMemory({ storage: store, options: { observationalMemory: omOptions(messageTokens, observationTokens) } }, onDebugEvent);
const engine = await memory.omEngine;

const agent = new Agent({
  id: 'prep-agent',
  name: 'Prep Agent',
  instructions: 'Replay agent (its instructions are not compared).',
  model: mockActor,
  memory,
});

// ---- replay, as prepare.ts: sessions sorted by date, createdAt = date + turnIdx*5s, pairs by index --------
const resourceId = `resource_${question.question_id}`;
const sessions = question.haystack_sessions.map((session, i) => ({
  session, sessionId: question.haystack_session_ids[i], date: question.haystack_dates[i],
}));
sessions.sort((a, b) => new Date(a.date).getTime() - new Date(b.date).getTime());

const schedule = [];
let fedCount = 0;
const t0 = Date.now();
for (const { session, sessionId, date } of sessions) {
  const sessionDate = new Date(date);
  const messages = [];
  for (let turnIdx = 0; turnIdx < session.length; turnIdx++) {
    const turn = session[turnIdx];
    if (!turn.content) continue;
    const role = turn.role === 'user' || turn.role === 'assistant' ? turn.role : 'user';
    const createdAt = new Date(sessionDate.getTime() + turnIdx * 5 * 1000);
    messages.push(dates === 'top' ? { role, content: turn.content, createdAt } : { role, content: turn.content, metadata: { createdAt } });
  }
  for (let i = 0; i < messages.length; i += 2) {
    const pair = messages.slice(i, Math.min(i + 2, messages.length));
    callsThisGenerate = 0;
    currentPair = schedule.length;
    if (clock === 'frozen') frozenAt = pair.at(-1).metadata?.createdAt?.getTime?.() - 1 || (pair.at(-1).createdAt.getTime() - 1);
    const threadId = oneThread ? `t_${question.question_id}` : sessionId;
    appendFileSync(eventsPath, JSON.stringify({ type: 'pair_start', pair: schedule.length, threadId }) + '\n');
    // how many requests the fake model had answered when this pair began (conformance/fake_model.py)
    const requestsBefore = await fetch(`${base}/requests`).then(r => r.json()).then(j => j.count).catch(() => null);
    await agent.generate(pair, {
      memory: { thread: threadId, resource: resourceId },
      modelSettings: { temperature: 0 },
    });
    // background buffering/reflection of this pair finishes before the next pair; settle again after a timer
    // tick: work a finished cycle schedules on a later tick (a reflection started once its observation lands)
    // is otherwise not yet registered, and its request was counted in the next pair (about 2 runs in 10)
    await engine.settled();
    for (let i = 0; i < 3; i++) {
      await new Promise(resolve => setTimeout(resolve, 20));
      await engine.settled();
    }
    fedCount += pair.length;
    schedule.push({ pair: schedule.length, requestsBefore, threadId, session: sessionId, messages: pair.map(m => ({ role: m.role, content: m.content, createdAt: (m.createdAt ?? m.metadata.createdAt).toISOString() })) });
  }
}
frozenAt = null;
const prepMs = Date.now() - t0;

// ---- the record after ingestion -------------------------------------------------------------------------
const lookup = scope === 'resource' ? { threadId: null, resourceId } : { threadId: oneThread ? `t_${question.question_id}` : sessions.at(-1).sessionId, resourceId };
let record = null;
try {
  record = await omStorage.getObservationalMemory(lookup.threadId, lookup.resourceId);
} catch (e) {
  record = { error: String(e) };
}
const threads = {};
const stored = {};
for (const sessionId of [...new Set(schedule.map(p => p.threadId))]) {
  const t = await omStorage.getThreadById({ threadId: sessionId });
  threads[sessionId] = t?.metadata ?? null;
  const { messages: ms } = await omStorage.listMessages({ threadId: sessionId, perPage: false });
  stored[sessionId] = ms.map(x => ({ id: x.id, role: x.role, createdAt: new Date(x.createdAt).toISOString(),
    text: (x.content?.parts ?? []).filter(p => p.type === 'text').map(p => p.text).join('\n'),
    partTypes: (x.content?.parts ?? []).map(p => p.type) }));
}

// ---- question time, as run.ts: new thread, default thresholds, currentDate = question date (local time) ----
const qMemory = new OMMemory({ storage: store, options: { observationalMemory: omOptions(30000, 40000) } }, null);
const m = question.question_date.match(/^(\d{4})\/(\d{2})\/(\d{2}).*?(\d{2}):(\d{2})/);
const questionDate = new Date(+m[1], +m[2] - 1, +m[3], +m[4], +m[5]);
const evalThreadId = oneThread ? `t_${question.question_id}` : `eval_${question.question_id}`;
const requestContext = new RequestContext([
  ['currentDate', questionDate],
  ['MastraMemory', { thread: { id: evalThreadId }, resourceId }],
]);
const qAgent = new Agent({
  id: 'longmemeval-agent',
  name: 'LongMemEval Agent',
  model: provider.chatModel('fake-actor'),
  instructions: 'Answer the question from the conversation history (not compared: own words, not the runner\'s).',
  memory: qMemory,
});
// run.ts's DateInjector rewrites the question to the official format; it is sent pre-rewritten here
if (clock === 'frozen') frozenAt = questionDate.getTime();
const qText = `Current Date: ${question.question_date}\nQuestion: ${question.question}`;
const res = await qAgent.generate(qText, {
  memory: { thread: evalThreadId, resource: resourceId }, requestContext, modelSettings: { temperature: 0 },
});

frozenAt = null;
writeFileSync(`${outDir}/schedule.json`, JSON.stringify({
  question_id: question.question_id, resourceId, scope, messageTokens, observationTokens, mode, oneThread, bufferTokens: bufferTokens ?? null,
  dates, clock, question: qText, questionDate: questionDate.toISOString(), evalThreadId, schedule,
}, null, 1));
writeFileSync(`${outDir}/record.json`, JSON.stringify({ record, threads, stored }, null, 1));
writeFileSync(`${outDir}/summary.json`, JSON.stringify({
  pairs: schedule.length, messages: fedCount, prepMs, actorMockCalls: actorCalls, answer: res.text,
  versions: {
    core: JSON.parse(readFileSync(new URL('node_modules/@mastra/core/package.json', import.meta.url))).version,
    memory: JSON.parse(readFileSync(new URL('node_modules/@mastra/memory/package.json', import.meta.url))).version,
  },
}, null, 1));
console.log(JSON.stringify({ pairs: schedule.length, messages: fedCount, prepMs, actorCalls, answer: res.text }));
