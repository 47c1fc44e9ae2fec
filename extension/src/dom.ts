/** The one DOM helper the renderers share: every text is set as text, never as markup. */

/** A new `tag` element of `className`, with `text` as its text when given. */
export function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}
