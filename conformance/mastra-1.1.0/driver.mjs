// om-bench conformance: drive the real @mastra/memory 1.1.0 (with @mastra/core 1.2.0) on one LongMemEval
// question, replayed as Mastra's runner (mastra-ai/mastra explorations/longmemeval prepare.ts + run.ts) replays it:
// sessions sorted by date, createdAt = session date + turn index * 5 s, one agent.generate per user/assistant
// pair, resource scope; then the question on a new thread with default thresholds. The OM model is
// an OpenAI-compatible endpoint (--base: conformance/fake_model.py); the prep Actor is an in-process mock.
//
//   TZ=UTC node conformance/mastra-1.1.0/driver.mjs --data q.json --out DIR --base http://127.0.0.1:PORT/v1 \
//       --message-tokens 2000 --observation-tokens 600 --mode twostep --dates metadata --clock frozen --nowriter
//
// Writes DIR/schedule.json (every pair fed: thread, roles, texts, times), DIR/record.json (the messages as
// Mastra stored them: ids, texts, createdAt), DIR/events.jsonl (OM debug events, `pair_start` marks each pair),
// DIR/actor_prompts.jsonl (the mock Actor's prompt at step 0 of every pair), DIR/summary.json.
//
// --clock frozen: `new Date()` reads the pair's last message time - 1 ms while a pair is fed and the question date
//                 at question time (core 1.2.0 stamps a pair's 2nd message and the merged empty response with "now")
// --dates metadata: the replayed createdAt goes under metadata.createdAt, which core 1.2.0 honours (prepare.ts put
//                 it on the ModelMessage itself, where 1.2.0 ignores it and stores wall-clock times)
// --mode twostep: the mock Actor answers finishReason "other" first and "stop" second, so every pair runs agent
//                 steps 0 and 1 (1.1.0 observes only at stepNumber > 0; prepare.ts's single step never would)
// --nowriter:     OM gets no stream writer. With one, 1.1.0 stores data-om-progress parts in the assistant
//                 messages and counts them as message tokens (a Mastra-side defect; om_core has no stream writer)
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
const { MessageHistory } = await import('@mastra/core/processors');
const { RequestContext } = await import('@mastra/core/request-context');
const { ObservationalMemory } = await import('@mastra/memory/processors');
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

const onDebugEvent = async event => {
  const e = { ...event };
  for (const k of Object.keys(e)) if (e[k] instanceof Date) e[k] = e[k].toISOString();
  if (Array.isArray(e.messages)) e.messages = e.messages.map(m => m.id);
  appendFileSync(eventsPath, JSON.stringify({ seqFed: fedCount, ...e }) + '\n');
};

// --nowriter: diagnostic only; OM gets no stream writer, so no data-om-progress / marker parts are written into
// the assistant messages (1.1.0's TokenCounter counts such parts as JSON text)
class NoWriterOM extends ObservationalMemory {
  async processInputStep(args) {
    return super.processInputStep({ ...args, writer: undefined });
  }
}
const OMClass = process.argv.includes('--nowriter') ? NoWriterOM : ObservationalMemory;
const om = new OMClass({
  obscureThreadIds: true,
  storage: omStorage,
  observation: { model: omModel, messageTokens },
  reflection: { model: omModel, observationTokens },
  scope,
  onDebugEvent,
});
const messageHistory = new MessageHistory({ storage: omStorage, lastMessages: 10 });

const agent = new Agent({
  id: 'prep-agent',
  name: 'Prep Agent',
  instructions: 'Replay agent (its instructions are not compared).',
  model: mockActor,
  inputProcessors: [om],
  outputProcessors: [messageHistory, om],
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
    appendFileSync(eventsPath, JSON.stringify({ type: 'pair_start', pair: schedule.length, threadId: sessionId }) + '\n');
    // how many requests the fake model had answered when this pair began (conformance/fake_model.py)
    const requestsBefore = await fetch(`${base}/requests`).then(r => r.json()).then(j => j.count).catch(() => null);
    await agent.generate(pair, {
      memory: { thread: sessionId, resource: resourceId },
      modelSettings: { temperature: 0 },
    });
    fedCount += pair.length;
    schedule.push({ pair: schedule.length, requestsBefore, threadId: sessionId, messages: pair.map(m => ({ role: m.role, content: m.content, createdAt: (m.createdAt ?? m.metadata.createdAt).toISOString() })) });
  }
}
frozenAt = null;
const prepMs = Date.now() - t0;

// ---- the record after ingestion -------------------------------------------------------------------------
const lookup = scope === 'resource' ? { threadId: null, resourceId } : { threadId: sessions.at(-1).sessionId, resourceId };
let record = null;
try {
  record = await omStorage.getObservationalMemory(lookup.threadId, lookup.resourceId);
} catch (e) {
  record = { error: String(e) };
}
const threads = {};
const stored = {};
for (const { sessionId } of sessions) {
  const t = await omStorage.getThreadById({ threadId: sessionId });
  threads[sessionId] = t?.metadata ?? null;
  const { messages: ms } = await omStorage.listMessages({ threadId: sessionId, perPage: false });
  stored[sessionId] = ms.map(x => ({ id: x.id, role: x.role, createdAt: new Date(x.createdAt).toISOString(),
    text: (x.content?.parts ?? []).filter(p => p.type === 'text').map(p => p.text).join('\n'),
    partTypes: (x.content?.parts ?? []).map(p => p.type) }));
}

// ---- question time, as run.ts: new thread, default thresholds, currentDate = question date (local time) ----
const qOm = new ObservationalMemory({
  obscureThreadIds: true,
  storage: omStorage,
  observation: { model: omModel, messageTokens: 30000 },
  reflection: { model: omModel, observationTokens: 40000 },
  scope,
});
const m = question.question_date.match(/^(\d{4})\/(\d{2})\/(\d{2}).*?(\d{2}):(\d{2})/);
const questionDate = new Date(+m[1], +m[2] - 1, +m[3], +m[4], +m[5]);
const evalThreadId = `eval_${question.question_id}`;
const requestContext = new RequestContext([
  ['currentDate', questionDate],
  ['MastraMemory', { thread: { id: evalThreadId }, resourceId }],
]);
const qAgent = new Agent({
  id: 'longmemeval-agent',
  name: 'LongMemEval Agent',
  model: provider.chatModel('fake-actor'),
  instructions: 'Answer the question from the conversation history (not compared: own words, not the runner\'s).',
  inputProcessors: [qOm],
});
// run.ts's DateInjector rewrites the question to the official format; it is sent pre-rewritten here
if (clock === 'frozen') frozenAt = questionDate.getTime();
const qText = `Current Date: ${question.question_date}\nQuestion: ${question.question}`;
const res = await qAgent.generate(qText, {
  threadId: evalThreadId, resourceId, requestContext, modelSettings: { temperature: 0 }, context: [],
});

frozenAt = null;
writeFileSync(`${outDir}/schedule.json`, JSON.stringify({
  question_id: question.question_id, resourceId, scope, messageTokens, observationTokens, mode,
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
