/**
 * Math with a calculator: data-dependent and multi-turn. The problems (three-digit
 * multiplications) are too hard to do in the head; the agent may call the calculator, reads the
 * result, and then answers with <answer>N</answer>.
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

export default defineEnvironment<ToolMathRow, State>({
  name: 'math-tools',
  description: 'Three-digit multiplication with a calculator tool.',
  systemPrompt: 'Solve the problem. Use the calculator, then give the final answer as <answer>N</answer>.',
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
    return ctx.task.question;
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
      const m = /(\d+)\s*\*\s*(\d+)/.exec(ctx.task.question);
      return m ? `<tool_call>calculator(${m[1]}*${m[2]})</tool_call>` : '<answer>0</answer>';
    },
    /** Guesses without the tool: usually wrong, which shows in the reward distribution. */
    guesser: (_observation, ctx) => `<answer>${Math.round(ctx.task.answer / 1000) * 1000}</answer>`,
  },
});
