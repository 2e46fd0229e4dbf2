import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { openApiDocument } from './openapi.js';

/**
 * A validator for a schema of the OpenAPI document: its `#/components/schemas/…` references
 * rewritten to `#/$defs/…`, so that ajv reads the document's own schemas (one source for the
 * document, the server and the tests).
 */
export function apiValidator(name: keyof typeof openApiDocument.components.schemas): ValidateFunction {
  const defs = JSON.parse(
    JSON.stringify(openApiDocument.components.schemas).replaceAll('#/components/schemas/', '#/$defs/'),
  ) as Record<string, object>;
  return ajv.compile({ $defs: defs, $ref: `#/$defs/${name}` });
}

const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });

/** ajv's errors as `{ path, message }`, naming the place and never a value. */
export function bodyErrors(
  errors: readonly ErrorObject[] | null | undefined,
): { path: string; message: string }[] {
  return (errors ?? [])
    .filter((e) => e.keyword !== 'if')
    .map((e) => {
      const extra = (e.params as { additionalProperty?: string }).additionalProperty;
      return {
        path: e.instancePath === '' ? '/' : e.instancePath,
        message: extra === undefined ? (e.message ?? 'is not valid') : 'has a key the API does not know',
      };
    });
}
