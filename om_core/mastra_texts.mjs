// Reads the Observer, Reflector (and for 1.31.0 the Actor-context) texts of an unpacked @mastra/memory package
// (om_core/mastra_texts.py runs it).
//   node mastra_texts.mjs <unpacked package dir> <out.json>
// The package's dist/*.js.map files carry its TypeScript sources; the observational-memory sources are bundled
// with esbuild (types erased, every package import replaced by an inert stub: the texts are string constants and
// template functions that call into no package when built) and the builders are called with marker arguments, so
// om_core can cut the texts it needs out of what Mastra itself builds.
import { readFileSync, readdirSync, mkdirSync, writeFileSync, mkdtempSync, existsSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const [pkgDir, outPath] = process.argv.slice(2);
const dist = join(pkgDir, 'dist');
const work = mkdtempSync(join(tmpdir(), 'om-mastra-texts-'));
for (const f of readdirSync(dist).filter(f => f.endsWith('.js.map'))) {
  const map = JSON.parse(readFileSync(join(dist, f), 'utf8'));
  (map.sources || []).forEach((source, i) => {
    const content = (map.sourcesContent || [])[i];
    if (!content || !source.includes('observational-memory/')) return;
    const path = join(work, source.replace(/^(\.\.\/)+/, ''));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  });
}
const om = join(work, 'src/processors/observational-memory');
for (const f of ['observer-agent.ts', 'reflector-agent.ts']) {
  if (!existsSync(join(om, f))) throw new Error(`${f} is not among the package's sources`);
}
// 1.31.0 composes its Observer/Reflector prompts from extractor lists (built-in-extractors.ts) and exports the
// Actor-context texts (constants.ts); 1.1.0 has neither
const v131 = existsSync(join(om, 'built-in-extractors.ts'));
const entry = join(work, 'entry.ts');
// Both releases write Actor-context texts inline in ObservationalMemory.formatObservationsForContext: 1.1.0's
// reads no instance state (called on a bare object); 1.31.0's reads its extractor lists and one chunking method
// of its own (called on an object of the class's prototype holding empty extractor lists)
writeFileSync(entry, `export * as observer from '${om}/observer-agent';\nexport * as reflector from '${om}/reflector-agent';\n` +
  (v131 ? `export * as extractors from '${om}/built-in-extractors';\nexport * as constants from '${om}/constants';\n` : '') +
  `export { ObservationalMemory } from '${om}/observational-memory';\n`);
const stub = {
  name: 'stub-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, a => ({ path: a.path, namespace: 'stub' }));
    // a relative import whose file the maps do not carry (type-only modules, code outside observational-memory/)
    b.onResolve({ filter: /^\./ }, a => {
      const base = join(a.resolveDir, a.path);
      const file = [base + '.ts', base + '.js', join(base, 'index.ts'), base].find(c => existsSync(c) && statSync(c).isFile());
      return file ? { path: file } : { path: a.path, namespace: 'stub' };
    });
    b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({
      contents: 'const h={get:(t,k)=>k==="__esModule"?false:(k===Symbol.toPrimitive?()=>"":new Proxy(function(){},h)),' +
        'apply:()=>new Proxy(function(){},h),construct:()=>new Proxy(function(){},h)};const P=new Proxy(function(){},h);' +
        // the module itself is callable too (a default-imported factory called at load, e.g. xxhash-wasm)
        'module.exports=new Proxy(function(){},{get:(t,k)=>k==="__esModule"?false:(k==="prototype"?{}:P),' +
        'ownKeys:()=>["z","prototype"],apply:()=>P,construct:()=>P,getOwnPropertyDescriptor:(t,k)=>k==="prototype"?' +
        'Reflect.getOwnPropertyDescriptor(t,k):({value:P,enumerable:true,configurable:true,writable:true})});',
      loader: 'js',
    }));
  },
};
const bundle = join(work, 'bundle.mjs');
await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'node', outfile: bundle, plugins: [stub],
              logLevel: 'error' });
const { observer, reflector, extractors, constants, ObservationalMemory } = await import(pathToFileURL(bundle).href);
const OBS = '\u0001OBSERVATIONS\u0001';
const GUIDE = '\u0002GUIDANCE\u0002';
const TASK = '\u0003TASK\u0003';
const SUGGESTED = '\u0004SUGGESTED\u0004';
const THREAD = '\u0005THREAD\u0005';
const OTHER = '\u0006OTHER\u0006';
const THREADS = ['t1', 't2', 't3', 't4', 't5', 't6', 't7'];  // no messages: only the count shows
let out;
if (!v131) {
  out = {
    observer_system_single: observer.buildObserverSystemPrompt(false),
    observer_system_multi: observer.buildObserverSystemPrompt(true),
    observer_user_single: observer.buildObserverPrompt(OBS, []),
    observer_user_multi: observer.buildMultiThreadObserverPrompt(OBS, new Map(), THREADS),
    reflector_system: reflector.buildReflectorSystemPrompt(),
    reflector_user: reflector.buildReflectorPrompt(OBS, GUIDE, true),
    reflector_retry: reflector.COMPRESSION_RETRY_PROMPT,
  };
  const format = ObservationalMemory?.prototype?.formatObservationsForContext;
  if (typeof format !== 'function') throw new Error('ObservationalMemory.formatObservationsForContext is not in the package');
  out.actor_context = format.call(Object.create(null), OBS, TASK, SUGGESTED, OTHER);
} else {
  // what observational-memory.ts passes at run time: the built-in current-task/suggested-response extractors
  // (composeObservationExtractors / composeReflectionExtractors with the default config), none for buffered calls
  const hints = extractors.composeExtractors({});
  const prior = { currentTask: TASK, suggestedResponse: SUGGESTED };
  const values = { 'current-task': TASK, 'suggested-response': SUGGESTED };
  const history = observer.buildMultiThreadObserverHistoryMessage(new Map(), THREADS);
  out = {
    observer_system_single: observer.buildObserverSystemPrompt(false, undefined, false, hints),
    observer_system_multi: observer.buildObserverSystemPrompt(true, undefined, false, hints),
    observer_system_single_buffered: observer.buildObserverSystemPrompt(false, undefined, false, []),
    observer_system_multi_buffered: observer.buildObserverSystemPrompt(true, undefined, false, []),
    observer_task_single: observer.buildObserverTaskPrompt(OBS, { extractors: hints }),
    observer_task_single_prior: observer.buildObserverTaskPrompt(undefined, { priorCurrentTask: TASK,
      priorSuggestedResponse: SUGGESTED, extractors: hints }),
    observer_task_single_buffered: observer.buildObserverTaskPrompt(undefined, { skipContinuationHints: true,
      extractors: [] }),
    observer_task_multi: observer.buildMultiThreadObserverTaskPrompt(OBS, [THREAD], new Map([[THREAD, prior]]),
      false, false, hints),
    observer_history_multi: history.content.map(p => p.text).join(''),
    reflector_system: reflector.buildReflectorSystemPrompt(undefined, hints),
    reflector_system_buffered: reflector.buildReflectorSystemPrompt(undefined, []),
    reflector_user: reflector.buildReflectorPrompt(OBS, GUIDE, 0, false, hints, values),
    reflector_user_buffered: reflector.buildReflectorPrompt(OBS, undefined, 0, true, []),
    reflector_level_1: reflector.COMPRESSION_GUIDANCE[1],
    reflector_level_2: reflector.COMPRESSION_GUIDANCE[2],
    reflector_level_3: reflector.COMPRESSION_GUIDANCE[3],
    reflector_level_4: reflector.COMPRESSION_GUIDANCE[4],
    actor_preamble: constants.OBSERVATION_CONTEXT_PROMPT,
    actor_instructions: constants.OBSERVATION_CONTEXT_INSTRUCTIONS,
    continuation: constants.OBSERVATION_CONTINUATION_HINT,
  };
  const format = ObservationalMemory?.prototype?.formatObservationsForContext;
  if (typeof format !== 'function') throw new Error('ObservationalMemory.formatObservationsForContext is not in the package');
  const self = Object.create(ObservationalMemory.prototype);
  self.observationConfig = { extractors: [] };
  self.reflectionConfig = { extractors: [] };
  out.actor_context = JSON.stringify(format.call(self, OBS, TASK, SUGGESTED, undefined, OTHER));
}
for (const [k, v] of Object.entries(out)) {
  if (typeof v !== 'string' || !v) throw new Error(`${k}: the package built no text`);
}
writeFileSync(outPath, JSON.stringify(out));
