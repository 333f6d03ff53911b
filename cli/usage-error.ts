// Bad usage: the command prints the message on one line, names --help, and exits 2 before anything runs (the bench
// likewise). Its own file so that every part of the command can throw it without importing the options.

/** Thrown for bad input: the command prints the message on one line and exits 2 (the bench likewise). */
export class UsageError extends Error {}
