/** Why the server will not start, said in one line (not a policy error: those have their own form). */
export class StartError extends Error {}
