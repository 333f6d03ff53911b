// Progress goes to stderr, one line a step; stdout carries only the table.
export const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
