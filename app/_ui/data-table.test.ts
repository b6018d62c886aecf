import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { DataTable, type Column } from './data-table';

interface Row {
  id: string;
  name: string;
  size: number;
}

const columns: Column<Row>[] = [
  { header: 'Size', num: true, cell: (r) => r.size },
  { header: 'Name', rowHeader: true, className: 'nowrap', title: (r) => `named ${r.name}`, cell: (r) => r.name },
];

const render = (rows: Row[], extra: Partial<Parameters<typeof DataTable<Row>>[0]> = {}) =>
  renderToStaticMarkup(createElement(DataTable<Row>, { label: 'Things', columns, rows, rowKey: (r) => r.id, ...extra }));

describe('DataTable', () => {
  it('labels the table, heads each column, and makes the row-header column the row’s header', () => {
    const html = render([{ id: 'a', name: 'alpha', size: 3 }]);
    expect(html).toContain('<table class="table" aria-label="Things">');
    expect(html).toContain('<th scope="col" class="num">Size</th><th scope="col">Name</th>');
    expect(html).toContain('<td class="num">3</td><th scope="row" class="nowrap" title="named alpha">alpha</th>');
  });

  it('writes cell text as text: markup in data is escaped, never made elements', () => {
    const html = render([{ id: 'x', name: '<img src=x onerror="alert(1)">', size: 1 }]);
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
  });

  it('shows the empty state instead of an empty table, and a pager when there are more pages', () => {
    expect(render([], { empty: 'Nothing yet' })).toBe('Nothing yet');
    const paged = render([{ id: 'a', name: 'alpha', size: 3 }], { pager: { page: 1, pageSize: 1, total: 3, onPage: () => {}, label: 'Pages of things' } });
    expect(paged).toContain('aria-label="Pages of things"');
    expect(paged).toContain('1–1 of 3 · page 1 of 3');
  });
});
