// Runs one state machine definition in aws-local-stepfunctions, with every
// Task state POSTing its input to a function under the Lambda RIE, and prints
// the execution as one JSON object on stdout.
//
// stdin: {"definition": path, "substitutions": {name: value},
//         "input": any, "tasks": {stateName: rieInvocationURL},
//         "queues": {stateName: standInURL}, "waitMs": number,
//         "context": the Context Object ($$), e.g. {"Execution": {"Id"}}}
// stdout: {"status": "SUCCEEDED"|"FAILED", "output", "error", "cause",
//          "events": [{"type", "state", "error", "cause", "errorEquals",
//                      "input" (of a StateEntered event)}],
//          "invocations": [{"state", "payload"}] (what each function got)}
//
// A function error becomes a thrown Error whose name is the errorType and
// whose message is the raw error payload, as Step Functions sets Error and
// Cause for a Lambda Task. A Task whose Resource is the optimized
// arn:aws:states:::lambda:invoke integration sends its Payload and gets
// {"StatusCode": 200, "Payload": <answer>}, as Step Functions does. Retry
// waits are overridden to 0 ms, and every Wait state's to waitMs when set.
//
// A Task state named in "queues" (an sqs:sendMessage.waitForTaskToken) POSTs
// its Parameters ({QueueUrl, MessageBody}) to a stand-in for the queue and
// the platform reading it: a 200 answer's JSON body is the task's output,
// as SendTaskSuccess gives it; any other answer, {"error", "cause"}, fails
// the task as SendTaskFailure does. A stand-in that does not answer lets
// the state's timeout fire (States.Timeout).
import { readFileSync } from 'node:fs';
import { StateMachine } from 'aws-local-stepfunctions';

const config = JSON.parse(readFileSync(0, 'utf8'));
let text = readFileSync(config.definition, 'utf8');
for (const [name, value] of Object.entries(config.substitutions ?? {})) {
  text = text.replaceAll('${' + name + '}', value);
}
const definition = JSON.parse(text);

// Step Functions reads TimeoutSecondsPath from the state's input; the
// interpreter reads it from the Parameters' output. Carry the value there
// as __timeout_seconds, which the queue handlers below drop again.
for (const state of Object.values(definition.States)) {
  if (state.Type === 'Task' && state.TimeoutSecondsPath && state.Parameters) {
    state.Parameters['__timeout_seconds.$'] = state.TimeoutSecondsPath;
    state.TimeoutSecondsPath = '$.__timeout_seconds';
  }
}

// The RIE crashes on concurrent invocations: one at a time per URL.
const tails = new Map();
function oneAtATime(url, fn) {
  const run = (tails.get(url) ?? Promise.resolve()).then(fn, fn);
  tails.set(url, run.catch(() => {}));
  return run;
}

const errorKeys = new Set(['errorType', 'errorMessage', 'stackTrace']);

async function invoke(url, input) {
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(input) });
  const body = await res.text();
  if (res.status !== 200) {
    throw Object.assign(new Error(`RIE answered ${res.status}: ${body}`), { name: 'Lambda.ServiceException' });
  }
  if (body.startsWith('Task timed out after ')) {
    throw Object.assign(new Error(body), { name: 'Sandbox.Timedout' });
  }
  const value = JSON.parse(body);
  if (value !== null && typeof value === 'object' && !Array.isArray(value) &&
      typeof value.errorType === 'string' && Object.keys(value).every((k) => errorKeys.has(k))) {
    throw Object.assign(new Error(body), { name: value.errorType });
  }
  return value;
}

// resources maps every Task state's name, nested ones included, to its Resource.
const resources = new Map();
(function collect(def) {
  for (const [name, state] of Object.entries(def?.States ?? {})) {
    if (state.Type === 'Task') resources.set(name, state.Resource);
    collect(state.ItemProcessor ?? state.Iterator);
    for (const branch of state.Branches ?? []) collect(branch);
  }
})(definition);

const lambdaInvoke = 'arn:aws:states:::lambda:invoke';
const invocations = [];
function record(state, payload) {
  invocations.push({ state, payload });
  return payload;
}
const taskResourceLocalHandlers = {};
const retryIntervalOverrides = {};
for (const [state, url] of Object.entries(config.tasks ?? {})) {
  if (resources.get(state) === lambdaInvoke) {
    taskResourceLocalHandlers[state] = async (input) =>
      ({ StatusCode: 200, Payload: await oneAtATime(url, () => invoke(url, record(state, input.Payload))) });
  } else {
    taskResourceLocalHandlers[state] = (input) => oneAtATime(url, () => invoke(url, record(state, input)));
  }
  retryIntervalOverrides[state] = 0;
}

for (const [state, url] of Object.entries(config.queues ?? {})) {
  taskResourceLocalHandlers[state] = async ({ __timeout_seconds, ...input }) => {
    const res = await fetch(url, { method: 'POST', body: JSON.stringify(record(state, input)) });
    const body = await res.text();
    if (res.status !== 200) {
      const failure = JSON.parse(body);
      throw Object.assign(new Error(failure.cause ?? ''), { name: failure.error ?? 'States.TaskFailed' });
    }
    return JSON.parse(body);
  };
}
const waitTimeOverrides = {};
if (config.waitMs !== undefined) {
  for (const [name, state] of Object.entries(definition.States)) {
    if (state.Type === 'Wait') waitTimeOverrides[name] = config.waitMs;
  }
}

const machine = new StateMachine(definition);
const execution = machine.run(config.input, {
  overrides: { taskResourceLocalHandlers, retryIntervalOverrides, waitTimeOverrides },
  context: config.context,
});

const out = { status: 'SUCCEEDED', events: [], invocations };
for await (const ev of execution.eventLogs) {
  out.events.push({
    type: ev.type,
    state: ev.state?.name ?? ev.parentState?.name,
    error: ev.Error,
    cause: typeof ev.Cause === 'string' ? ev.Cause : undefined,
    errorEquals: ev.retry?.retrier?.ErrorEquals ?? ev.catch?.catcher?.ErrorEquals,
    input: ev.type === 'StateEntered' ? ev.state?.input : undefined,
  });
  if (ev.type === 'ExecutionFailed') {
    Object.assign(out, { status: 'FAILED', error: ev.Error, cause: ev.Cause });
  }
}
try {
  out.output = await execution.result;
} catch (err) {
  out.status = 'FAILED';
  out.error ??= err.name;
  out.cause ??= err.message;
}
// A stand-in that never answered still holds a request open: exit anyway.
process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0));
