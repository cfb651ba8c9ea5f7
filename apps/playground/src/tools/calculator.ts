/**
 * A small arithmetic evaluator for the playground's calculator tool: numbers, + - * / % ^,
 * parentheses and unary minus. No identifiers, no calls, no `eval` — a model's expression can only
 * ever be arithmetic.
 */
export class CalculatorError extends Error {
  override readonly name = "CalculatorError";
}

export function calculate(expression: string): number {
  const tokens = tokenize(expression);
  let at = 0;
  const peek = () => tokens[at];
  const take = () => tokens[at++];

  function primary(): number {
    const token = take();
    if (token === undefined) throw new CalculatorError("The expression ended where a number was expected.");
    if (token === "(") {
      const value = sum();
      if (take() !== ")") throw new CalculatorError("A '(' is never closed.");
      return value;
    }
    if (token === "-") return -power();
    if (token === "+") return power();
    const value = Number(token);
    if (!Number.isFinite(value)) throw new CalculatorError(`'${token}' is not a number.`);
    return value;
  }
  function power(): number {
    const base = primary();
    if (peek() === "^") {
      take();
      return base ** power();
    }
    return base;
  }
  function product(): number {
    let value = power();
    for (let op = peek(); op === "*" || op === "/" || op === "%"; op = peek()) {
      take();
      const right = power();
      if ((op === "/" || op === "%") && right === 0) throw new CalculatorError("Division by zero.");
      value = op === "*" ? value * right : op === "/" ? value / right : value % right;
    }
    return value;
  }
  function sum(): number {
    let value = product();
    for (let op = peek(); op === "+" || op === "-"; op = peek()) {
      take();
      value = op === "+" ? value + product() : value - product();
    }
    return value;
  }

  const value = sum();
  if (at < tokens.length) throw new CalculatorError(`Unexpected '${tokens[at]}' in the expression.`);
  return value;
}

function tokenize(expression: string): string[] {
  const tokens: string[] = [];
  const text = expression.replace(/×/g, "*").replace(/÷/g, "/").replace(/\*\*/g, "^");
  const pattern = /\s*(?:(\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+)|([-+*/%^()]))/iy;
  while (pattern.lastIndex < text.length) {
    const start = pattern.lastIndex;
    const match = pattern.exec(text);
    if (!match) {
      if (/^\s*$/.test(text.slice(start))) break;
      throw new CalculatorError(
        `Cannot read '${text.slice(start).trim().slice(0, 20)}': only numbers and + - * / % ^ ( ) are allowed.`,
      );
    }
    tokens.push((match[1] ?? match[2])!);
  }
  if (tokens.length === 0) throw new CalculatorError("The expression is empty.");
  return tokens;
}
