import { describe, expect, it } from 'vitest';
import { modelName } from './phone-models.js';

describe('modelName: what people call the model a phone reports', () => {
  it.each([
    ['iPhone14,6', 'iPhone SE (3rd generation)'],
    ['iPhone15,4', 'iPhone 15'],
    // A Samsung's model number, whatever its region's letters.
    ['SM-S911B', 'Galaxy S23'],
    ['SM-S911U1', 'Galaxy S23'],
    ['SM-S928B', 'Galaxy S24 Ultra'],
    ['SM-A546E', 'Galaxy A54 5G'],
    ['SM-F946B', 'Galaxy Z Fold5'],
    // Not known: the identifier itself.
    ['SM-X999B', 'SM-X999B'],
    ['SM-', 'SM-'],
    ['Pixel 8', 'Pixel 8'],
    ['iPhone99,1', 'iPhone99,1'],
  ])('%s is %s', (model, name) => {
    expect(modelName(model)).toBe(name);
  });
});
