/**
 * Finds the first key repeated inside one JSON object, which JSON.parse would silently
 * resolve to the last value. PUT /v1/pools rejects repeated keys; the text is assumed to
 * be valid JSON already (JSON.parse ran first).
 */
export function findDuplicateKey(text: string): string | undefined {
  const stack: (Set<string> | null)[] = [];
  let i = 0;
  let expectKey = false;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"') {
      const end = stringEnd(text, i);
      const top = stack[stack.length - 1];
      if (expectKey && top) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.has(key)) return key;
        top.add(key);
      }
      expectKey = false;
      i = end + 1;
      continue;
    }
    if (ch === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (ch === '[') {
      stack.push(null);
    } else if (ch === '}' || ch === ']') {
      stack.pop();
    } else if (ch === ',') {
      expectKey = stack[stack.length - 1] instanceof Set;
    }
    i++;
  }
  return undefined;
}

function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    if (text[i] === '\\') i += 2;
    else if (text[i] === '"') return i;
    else i++;
  }
  return text.length - 1;
}
