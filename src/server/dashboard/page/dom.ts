/** Builds elements with text content only: nothing the server sends is ever parsed as HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  element.append(...children);
  return element;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element as T;
}

/** A definition list of label and value pairs. */
export function figures(list: HTMLElement, pairs: [string, string, string?][]): void {
  list.replaceChildren(
    ...pairs.map(([label, value, name]) =>
      h('div', {}, h('dt', {}, label), h('dd', name === undefined ? {} : { 'data-figure': name }, value)),
    ),
  );
}
