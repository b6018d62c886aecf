import { type Json, type ObjectSchema, schemaToText, validateValue } from './schema';

/**
 * A function the agent may call from its text. The runtime finds the call, checks the arguments
 * against `parameters`, runs `run` inside the sandbox and gives the result back to the agent as
 * its next observation.
 *
 * Call syntax (documented to the agent by `describeTools`):
 *
 *     <tool_call>{"name": "calculator", "arguments": {"expression": "123*456"}}</tool_call>
 *
 * or, shorter, `name(arguments)` where the arguments are a JSON object, or — for a tool with a
 * single parameter — the bare value:
 *
 *     <tool_call>calculator(123*456)</tool_call>
 *
 * The result comes back as `<tool_result>56088</tool_result>`. Only the first call in a turn runs.
 */
export interface ToolDefinition<Ctx = unknown> {
  name: string;
  description: string;
  parameters: ObjectSchema;
  /** Returns the result shown to the agent (strings verbatim, other values as JSON). May throw to report an error to the agent. */
  run(args: Record<string, Json>, ctx: Ctx): Json;
}

export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';

/** What `parseToolCall` found in an agent's text. */
export type ToolCallParse =
  | { kind: 'none' }
  | { kind: 'call'; name: string; args: Record<string, Json>; raw: string }
  | { kind: 'malformed'; raw: string; problem: string };

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/**
 * Finds the first tool call in `text`. A missing closing tag is tolerated when the text ends
 * inside the call, because generation usually stops on `</tool_call>` and may drop it.
 */
export function parseToolCall(text: string, tools: readonly Pick<ToolDefinition, 'name' | 'parameters'>[]): ToolCallParse {
  const start = text.indexOf(TOOL_CALL_OPEN);
  if (start < 0) return { kind: 'none' };
  const bodyStart = start + TOOL_CALL_OPEN.length;
  const end = text.indexOf(TOOL_CALL_CLOSE, bodyStart);
  const body = (end < 0 ? text.slice(bodyStart) : text.slice(bodyStart, end)).trim();
  const raw = text.slice(start, end < 0 ? text.length : end + TOOL_CALL_CLOSE.length);
  const malformed = (problem: string): ToolCallParse => ({ kind: 'malformed', raw, problem });

  let name: string;
  let args: unknown;
  if (body.startsWith('{')) {
    const parsed = tryJson(body);
    if (!isRecord(parsed) || typeof parsed.name !== 'string') {
      return malformed('expected {"name": ..., "arguments": {...}}');
    }
    name = parsed.name;
    args = parsed.arguments ?? {};
  } else {
    const open = body.indexOf('(');
    if (open < 0 || !body.endsWith(')')) return malformed('expected name(arguments) or a JSON object');
    name = body.slice(0, open).trim();
    const inner = body.slice(open + 1, -1).trim();
    const tool = tools.find((t) => t.name === name);
    const params = tool ? Object.keys(tool.parameters.properties) : [];
    if (inner.startsWith('{') && isRecord(tryJson(inner))) {
      args = tryJson(inner);
    } else if (params.length === 1) {
      // Bare value for a single-parameter tool: typed by the parameter's schema.
      const schema = tool!.parameters.properties[params[0]];
      args = { [params[0]]: schema.type === 'string' ? unquote(inner) : tryJson(inner) ?? inner };
    } else if (inner === '' && params.length === 0) {
      args = {};
    } else {
      args = undefined;
    }
  }
  if (!NAME.test(name)) return malformed(`"${name}" is not a tool name`);
  const tool = tools.find((t) => t.name === name);
  if (!tool) return malformed(`unknown tool "${name}"; available: ${tools.map((t) => t.name).join(', ') || 'none'}`);
  if (!isRecord(args)) return malformed(`cannot read the arguments of ${name}`);
  const problems = validateValue(tool.parameters, args, 'arguments');
  if (problems.length > 0) return malformed(problems.join('; '));
  return { kind: 'call', name, args: args as Record<string, Json>, raw };
}

/** Formats a tool's result (or error) as the observation the agent reads next. */
export function formatToolResult(result: Json | { error: string }): string {
  const text =
    isRecord(result) && typeof result.error === 'string' && Object.keys(result).length === 1
      ? `error: ${result.error}`
      : typeof result === 'string'
        ? result
        : JSON.stringify(result);
  return `<tool_result>${text}</tool_result>`;
}

/** A paragraph for the system prompt: the tools, their arguments and the call syntax. */
export function describeTools(tools: readonly Pick<ToolDefinition, 'name' | 'description' | 'parameters'>[]): string {
  if (tools.length === 0) return '';
  const lines = tools.map((t) => `- ${t.name}${schemaToText(t.parameters)}: ${t.description}`);
  const example = tools[0];
  return [
    'You can call these tools:',
    ...lines,
    `To call one, write ${TOOL_CALL_OPEN}${example.name}(arguments)${TOOL_CALL_CLOSE}; the result comes back as <tool_result>...</tool_result>.`,
  ].join('\n');
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function unquote(text: string): string {
  const parsed = text.startsWith('"') ? tryJson(text) : undefined;
  return typeof parsed === 'string' ? parsed : text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
