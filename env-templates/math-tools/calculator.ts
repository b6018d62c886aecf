/**
 * A small arithmetic evaluator for the calculator tool: integers and decimals, + - * / and
 * parentheses, unary minus. A recursive-descent parser, never eval.
 */
export function evaluate(expression: string): number {
  const tokens = expression.match(/\d+(?:\.\d+)?|[-+*/()]|\S/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const take = () => tokens[i++];

  function primary(): number {
    const t = take();
    if (t === undefined) throw new Error('the expression ended early');
    if (t === '(') {
      const value = sum();
      if (take() !== ')') throw new Error('missing )');
      return value;
    }
    if (t === '-') return -primary();
    if (/^\d/.test(t)) return Number(t);
    throw new Error(`unexpected "${t}"`);
  }
  function product(): number {
    let value = primary();
    while (peek() === '*' || peek() === '/') {
      const op = take();
      const right = primary();
      if (op === '/' && right === 0) throw new Error('division by zero');
      value = op === '*' ? value * right : value / right;
    }
    return value;
  }
  function sum(): number {
    let value = product();
    while (peek() === '+' || peek() === '-') {
      const op = take();
      const right = product();
      value = op === '+' ? value + right : value - right;
    }
    return value;
  }

  if (tokens.length === 0) throw new Error('empty expression');
  if (tokens.length > 200) throw new Error('expression too long');
  const value = sum();
  if (i < tokens.length) throw new Error(`unexpected "${tokens[i]}"`);
  return value;
}
