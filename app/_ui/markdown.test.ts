import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { linkableHref, UntrustedMarkdown } from './markdown';

const render = (markdown: string) => renderToStaticMarkup(createElement(UntrustedMarkdown, null, markdown));

describe('untrusted Markdown', () => {
  it('renders Markdown: headings, emphasis, lists, code and http(s) or mailto links', () => {
    const html = render('# Title\n\nSome *text* and `code`.\n\n- one\n- [docs](https://example.com/a?b=1) and [mail](mailto:a@example.com)\n');
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<em>text</em>');
    expect(html).toContain('<code>code</code>');
    expect(html).toContain('<a href="https://example.com/a?b=1" target="_blank" rel="noopener noreferrer nofollow">docs</a>');
    expect(html).toContain('<a href="mailto:a@example.com"');
  });

  it('keeps raw HTML as text: no script, no image handler, no closing textarea escapes', () => {
    const payloads = [
      '<script>window.pwned = 1</script>',
      'inline <img src=x onerror="window.pwned = 1"> here',
      '</textarea><script>window.pwned = 1</script>',
      '<iframe src="https://evil.example"></iframe>',
      '<a href="javascript:alert(1)">html link</a>',
    ];
    for (const payload of payloads) {
      const html = render(payload);
      expect(html, payload).not.toMatch(/<(script|img|iframe|textarea)\b/i);
      expect(html, payload).not.toMatch(/<[^>]+\son\w+=/i);
      expect(html, payload).not.toMatch(/href="javascript:/i);
      // What the author wrote is still there to read, escaped.
      expect(html, payload).toContain('&lt;');
    }
  });

  it('renders links to anything but http(s) or mailto, and images, as text', () => {
    for (const [markdown, text] of [
      ['[click](javascript:alert(1))', 'click'],
      ['[data](data:text/html;base64,PHNjcmlwdD4=)', 'data'],
      ['[relative](/teams/x)', 'relative'],
      ['[vb](vbscript:msgbox)', 'vb'],
      ['<javascript:alert(1)>', ''],
    ] as const) {
      const html = render(markdown);
      expect(html, markdown).not.toContain('<a ');
      expect(html, markdown).toContain(text);
    }
    const image = render('![a cat](https://example.com/cat.png) ![](x.png)');
    expect(image).not.toContain('<img');
    expect(image).toContain('[image: a cat]');
    expect(image).toContain('[image]');
  });

  it('decides what may be a link', () => {
    expect(linkableHref('https://example.com')).toBe('https://example.com');
    expect(linkableHref('HTTP://EXAMPLE.COM')).toBe('HTTP://EXAMPLE.COM');
    expect(linkableHref(' javascript:alert(1)')).toBeNull();
    expect(linkableHref('java\nscript:alert(1)')).toBeNull();
    expect(linkableHref('//evil.example')).toBeNull();
    expect(linkableHref(undefined)).toBeNull();
  });
});
