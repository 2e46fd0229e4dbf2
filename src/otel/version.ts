/**
 * The version of sluice that the default meter is named with (`getMeter('sluice', version)`).
 * Written out rather than read from package.json, which a bundle may not carry; a test keeps it
 * equal to package.json's.
 */
export const SLUICE_VERSION = '0.1.0';
