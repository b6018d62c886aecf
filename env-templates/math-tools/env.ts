/**
 * Math with a calculator: data-dependent and multi-turn. The problems (three-digit
 * multiplications) are too hard to do in the head; the agent calls the calculator, reads the
 * result, and then answers with <answer>N</answer>.
 *
 * The prompt is compact on purpose, for a small model trained from scratch (see README.md and
 * env-templates/LEARNING.md): the system prompt is one word, the question is shown as `493*701`,
 * the SDK's paragraph about the tools is left out (`toolPrompt: 'none'`: the call syntax is learned
 * from the `tool-user` bot's demonstrations), and each turn sees only its latest observation (the
 * question, then the tool's result). A bot-played turn is then about 70 tokens instead of 465, and
 * learning takes a few hundred steps instead of never finishing.
 */
import { defineEnvironment } from 'whetstone';
import { evaluate } from './calculator';

export interface ToolMathRow {
  question: string;
  answer: number;
}

interface State {
  calls: number;
}

/** The final answer: <answer>N</answer>, or a reply that is just a number. Null when there is none. */
export function readFinalAnswer(text: string): string | null {
  const tagged = /<answer>\s*(-?\d+)\s*<\/answer>/.exec(text);
  if (tagged) return tagged[1];
  const bare = text.trim();
  return /^-?\d+$/.test(bare) ? bare : null;
}

/** The operands of a row's question ("What is 493 * 701?"), or null for another kind of question. */
function operands(question: string): [string, string] | null {
  const m = /(\d+)\s*\*\s*(\d+)/.exec(question);
  return m ? [m[1], m[2]] : null;
}

/** What the agent reads: "493*701" for a multiplication, else the question as written. */
export function shownQuestion(question: string): string {
  const ab = operands(question);
  return ab ? `${ab[0]}*${ab[1]}` : question;
}

export default defineEnvironment<ToolMathRow, State>({
  name: 'math-tools',
  description: 'Three-digit multiplication with a calculator tool.',
  systemPrompt: 'Multiply.',
  context: 'latest',
  toolPrompt: 'none',
  rowSchema: {
    type: 'object',
    properties: { question: { type: 'string' }, answer: { type: 'number', integer: true } },
  },
  tools: [
    {
      name: 'calculator',
      description: 'Evaluates an arithmetic expression with + - * / and parentheses.',
      parameters: { type: 'object', properties: { expression: { type: 'string', description: 'e.g. 347*862' } } },
      run: (args, ctx) => {
        ctx.state.calls++;
        const value = evaluate(String(args.expression));
        return Number.isInteger(value) ? value : Number(value.toFixed(6));
      },
    },
  ],
  reset: (ctx) => {
    ctx.state = { calls: 0 };
    return shownQuestion(ctx.task.question);
  },
  step: (action, ctx) => {
    const given = readFinalAnswer(action);
    if (given === null) {
      return { observation: 'Give the final answer as <answer>N</answer>, or call the calculator.', reward: 0, terminated: false, info: { given: null } };
    }
    const correct = given === String(ctx.task.answer);
    return { observation: '', reward: correct ? 1 : 0, terminated: true, info: { given, correct, calls: ctx.state.calls } };
  },
  bots: {
    /** Calls the calculator first, then answers with what it returned. */
    'tool-user': (observation, ctx) => {
      const result = /<tool_result>(-?\d+)<\/tool_result>/.exec(observation);
      if (result) return `<answer>${result[1]}</answer>`;
      const ab = operands(ctx.task.question);
      return ab ? `<tool_call>calculator(${ab[0]}*${ab[1]})</tool_call>` : '<answer>0</answer>';
    },
    /** Guesses without the tool: usually wrong, which shows in the reward distribution. */
    guesser: (_observation, ctx) => `<answer>${Math.round(ctx.task.answer / 1000) * 1000}</answer>`,
  },
});
