import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { normalizePath, pathOf } from '../../src/http/path.js';
import { RouteSet, parseMethods } from '../../src/http/routes.js';

describe('pathOf', () => {
  it('drops the query and the fragment, and takes the path of an absolute-form target', () => {
    assert.equal(pathOf('/api/things?page=2'), '/api/things');
    assert.equal(pathOf('/api/things#top'), '/api/things');
    assert.equal(pathOf('/a?b#c'), '/a');
    assert.equal(pathOf('http://127.0.0.1:8080/api?x=1'), '/api');
    assert.equal(pathOf('https://example.com'), '/');
    assert.equal(pathOf(undefined), '/');
    assert.equal(pathOf(''), '/');
  });
});

describe('normalizePath', () => {
  it('gives every spelling of one path the same form', () => {
    for (const spelling of [
      '/health',
      '/health/',
      '//health',
      '/health//',
      '/./health',
      '/x/../health',
      '/%68ealth',
      '/%68%65alth',
      '/HEALTH',
      '/../health',
    ]) {
      assert.equal(normalizePath(spelling), '/health', spelling);
    }
  });

  it('keeps escapes of reserved characters: %2F is not a slash', () => {
    assert.equal(normalizePath('/a%2Fb'), '/a%2fb');
    assert.notEqual(normalizePath('/a%2Fb'), normalizePath('/a/b'));
    assert.equal(normalizePath('/'), '/');
    assert.equal(normalizePath('/%7Euser'), '/~user');
  });
});

describe('RouteSet', () => {
  it('matches exact routes in any spelling, prefix routes below them, and HEAD with GET', () => {
    const routes = new RouteSet(['POST /api/messages', 'GET /health/*', 'delete /api/things']);
    assert.ok(routes.matches('POST', '/api/messages'));
    assert.ok(routes.matches('POST', '/api/messages/'));
    assert.ok(!routes.matches('POST', '/api/messages/1'), 'an exact route is not a prefix');
    assert.ok(!routes.matches('PUT', '/api/messages'));
    assert.ok(routes.matches('DELETE', '/api/things'));
    for (const method of ['GET', 'HEAD']) {
      assert.ok(routes.matches(method, '/health'));
      assert.ok(routes.matches(method, '/health/live'));
      assert.ok(!routes.matches(method, '/healthz'), 'a prefix ends at a segment');
    }
    assert.ok(!routes.matches('POST', '/health'));
  });

  it('"GET /*" is every path', () => {
    const routes = new RouteSet(['GET /*']);
    assert.ok(routes.matches('GET', '/'));
    assert.ok(routes.matches('HEAD', '/anything/below'));
  });

  it('methods: GET brings HEAD', () => {
    assert.deepEqual([...parseMethods(['get', 'POST'])!], ['GET', 'POST', 'HEAD']);
    assert.equal(parseMethods(undefined), undefined);
  });
});
