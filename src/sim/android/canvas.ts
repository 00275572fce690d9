import { ADVANCE, GLYPH_HEIGHT, GLYPH_WIDTH, glyph } from './font.js';

export type Rgb = readonly [number, number, number];

/** An RGBA framebuffer with the few primitives the simulated UI needs. */
export class Canvas {
  readonly data: Buffer;

  /**
   * Filled with `background` from the start: a zeroed buffer painted over at once was two passes over 10 MB for each
   * picture of a moving screen (a quarter of the busy time in a profile of the H.264 screen's GUI test).
   */
  constructor(
    readonly width: number,
    readonly height: number,
    background: Rgb,
  ) {
    this.data = Buffer.allocUnsafe(width * height * 4);
    this.fill(background);
  }

  /** Whether a picture of this size can be drawn over this canvas (its pixels reused rather than new memory). */
  fits(width: number, height: number): boolean {
    return this.width === width && this.height === height;
  }

  fill(color: Rgb): void {
    this.data.fill(Buffer.from([color[0], color[1], color[2], 255]));
  }

  fillRect(x: number, y: number, w: number, h: number, color: Rgb): void {
    const x0 = Math.max(0, Math.round(x));
    const y0 = Math.max(0, Math.round(y));
    const x1 = Math.min(this.width, Math.round(x + w));
    const y1 = Math.min(this.height, Math.round(y + h));
    if (x1 <= x0 || y1 <= y0) return;
    const pixel = Buffer.from([color[0], color[1], color[2], 255]);
    for (let row = y0; row < y1; row++) {
      const start = (row * this.width + x0) * 4;
      this.data.fill(pixel, start, start + (x1 - x0) * 4);
    }
  }

  /** A rectangle with corners cut to the given radius. */
  fillRoundRect(x: number, y: number, w: number, h: number, radius: number, color: Rgb): void {
    const r = Math.min(radius, w / 2, h / 2);
    for (let row = 0; row < h; row++) {
      let inset = 0;
      const dy = row < r ? r - row - 0.5 : row >= h - r ? row - (h - r) + 0.5 : 0;
      if (dy > 0) inset = r - Math.sqrt(Math.max(0, r * r - dy * dy));
      this.fillRect(x + inset, y + row, w - 2 * inset, 1, color);
    }
  }

  fillCircle(cx: number, cy: number, radius: number, color: Rgb): void {
    for (let dy = -radius; dy <= radius; dy++) {
      const half = Math.sqrt(radius * radius - dy * dy);
      this.fillRect(cx - half, cy + dy, half * 2, 1, color);
    }
  }

  ring(cx: number, cy: number, radius: number, thickness: number, color: Rgb): void {
    const inner = radius - thickness;
    for (let dy = -radius; dy <= radius; dy++) {
      const outerHalf = Math.sqrt(radius * radius - dy * dy);
      if (Math.abs(dy) >= inner) {
        this.fillRect(cx - outerHalf, cy + dy, outerHalf * 2, 1, color);
        continue;
      }
      const innerHalf = Math.sqrt(inner * inner - dy * dy);
      this.fillRect(cx - outerHalf, cy + dy, outerHalf - innerHalf, 1, color);
      this.fillRect(cx + innerHalf, cy + dy, outerHalf - innerHalf, 1, color);
    }
  }

  text(text: string, x: number, y: number, scale: number, color: Rgb): void {
    let pen = x;
    for (const ch of text) {
      const rows = glyph(ch);
      for (let row = 0; row < rows.length; row++) {
        const bits = rows[row]!;
        for (let col = 0; col < GLYPH_WIDTH; col++) {
          if (bits & (1 << (GLYPH_WIDTH - 1 - col))) this.fillRect(pen + col * scale, y + row * scale, scale, scale, color);
        }
      }
      pen += ADVANCE * scale;
    }
  }
}

export function textWidth(text: string, scale: number): number {
  const n = [...text].length;
  return n === 0 ? 0 : (n * ADVANCE - 1) * scale;
}

export function textHeight(scale: number): number {
  return GLYPH_HEIGHT * scale;
}

/** Cuts text to fit a width, ending in "..." when it had to. */
export function ellipsize(text: string, scale: number, maxWidth: number): string {
  if (textWidth(text, scale) <= maxWidth) return text;
  const chars = [...text];
  while (chars.length > 0 && textWidth(chars.join('') + '...', scale) > maxWidth) chars.pop();
  return chars.join('') + '...';
}

/** Greedy word wrap that also breaks explicit newlines and over-long words. */
export function wrap(text: string, scale: number, maxWidth: number): string[] {
  const perLine = Math.max(1, Math.floor((maxWidth + scale) / (ADVANCE * scale)));
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(/(\s+)/)) {
      if ([...line + word].length <= perLine) {
        line += word;
        continue;
      }
      if (line.trim()) lines.push(line.trimEnd());
      line = word.trimStart();
      while ([...line].length > perLine) {
        const chars = [...line];
        lines.push(chars.slice(0, perLine).join(''));
        line = chars.slice(perLine).join('');
      }
    }
    lines.push(line);
  }
  return lines;
}
