/**
 * When a Fetch response is over: a `Response` is only a promise of bytes, and the handler returns
 * it before the server has sent them. For `countOnly`, a request is finished once its body has
 * been read to the end (by its status) or cancelled (the client went away: failed).
 */

/**
 * `response` with a body that calls `finish` once, when the server has read it all (with the
 * status) or cancelled it (with undefined). A response without a body is finished at once.
 *
 * @example
 * return finishingBody(response, (status) => guard.finish(outcome, status));
 */
export function finishingBody(response: Response, finish: (status: number | undefined) => void): Response {
  const source = response.body;
  if (source === null) {
    finish(response.status);
    return response;
  }
  let finished = false;
  const once = (status: number | undefined): void => {
    if (finished) return;
    finished = true;
    finish(status);
  };
  const reader = source.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          once(response.status);
        } else controller.enqueue(value);
      } catch (error) {
        once(undefined);
        controller.error(error);
      }
    },
    cancel(reason) {
      once(undefined);
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
