/** Types of scripts/entries.mjs: entry name to its source file. */
export declare const libraryEntries: Readonly<Record<string, string>>;
export declare const entries: Readonly<Record<string, string>>;
