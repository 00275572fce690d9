import { describe, expect, it } from 'vitest';
import { commandLabel, elementOf, foundElements, isFind, parseCommand } from './webdriver-commands.js';

describe('commandLabel: what a command was, in words for the run\'s log', () => {
  it('names a script by its name, and cuts a plain script short', () => {
    expect(commandLabel('execute/sync', JSON.stringify({ script: 'mobile: swipeGesture', args: [{ direction: 'up' }] }))).toBe('mobile: swipeGesture');
    expect(commandLabel('execute/sync', JSON.stringify({ script: 'benchtop: status', args: [{ status: 'passed' }] }))).toBe('benchtop: status');
    const plain = commandLabel('execute/async', JSON.stringify({ script: `return fetch("/secret?${'a'.repeat(500)}")`, args: [] }))!;
    expect(plain).toHaveLength(60);
    expect(plain.endsWith('…')).toBe(true);
  });

  it('names a find by its strategy and value, at most 200 characters', () => {
    expect(commandLabel('element', JSON.stringify({ using: 'accessibility id', value: 'Login' }))).toBe('accessibility id Login');
    expect(commandLabel('element/:id/elements', JSON.stringify({ using: 'xpath', value: `//a${'/b'.repeat(300)}` }))).toHaveLength(200);
  });

  it('says nothing of other routes or of a body it cannot read', () => {
    expect(commandLabel('appium/settings', JSON.stringify({ settings: { a: 1 } }))).toBeUndefined();
    expect(commandLabel('element', 'not json')).toBeUndefined();
    expect(commandLabel('element', JSON.stringify({ using: 'xpath' }))).toBeUndefined();
  });

  it('reads the finds\' bodies (small, and what the log names), and streams the rest as before', () => {
    for (const path of ['/element', '/elements', '/element/e1/element', '/element/e1/elements']) {
      const command = parseCommand('POST', path);
      expect(command.body).toBe('inspect');
      expect(isFind(command.template)).toBe(true);
    }
    expect(parseCommand('POST', '/element/e1/click').body).toBe('stream');
  });

  it('reads the elements a find answered with, W3C\'s key or JSONWP\'s, and at most 100 of a list', () => {
    const w3c = 'element-6066-11e4-a52e-4f735466cecf';
    expect(foundElements(Buffer.from(JSON.stringify({ value: { [w3c]: 'e1', ELEMENT: 'e1' } })))).toEqual(['e1']);
    expect(foundElements(Buffer.from(JSON.stringify({ value: [{ ELEMENT: 'e2' }, { [w3c]: 'e3' }, { other: 'x' }, 'e4'] })))).toEqual(['e2', 'e3']);
    const many = Array.from({ length: 150 }, (_, i) => ({ [w3c]: `e${i}` }));
    expect(foundElements(Buffer.from(JSON.stringify({ value: many })))).toHaveLength(100);
    expect(foundElements(Buffer.from('not json'))).toEqual([]);
    expect(foundElements(Buffer.from(JSON.stringify({ value: null })))).toEqual([]);
    expect(foundElements(Buffer.from(JSON.stringify({ value: { [w3c]: 'e1', pad: 'x'.repeat(300 * 1024) } })))).toEqual([]);
  });

  it('names the element a command acts on, and none for a command of no element', () => {
    expect(elementOf(parseCommand('POST', '/element/e1/click'))).toBe('e1');
    expect(elementOf(parseCommand('GET', '/element/e2/attribute/text'))).toBe('e2');
    expect(elementOf(parseCommand('POST', '/appium/element/e3/value'))).toBe('e3');
    expect(elementOf(parseCommand('POST', '/element'))).toBeUndefined();
    expect(elementOf(parseCommand('GET', '/screenshot'))).toBeUndefined();
  });
});
