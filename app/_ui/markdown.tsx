import Markdown, { type Components } from 'react-markdown';

// Markdown written by other people, user code or models (READMEs, descriptions, environments
// imported from other teams) is shown as Markdown and never as markup: raw HTML in it stays
// literal text (react-markdown turns it into text unless a raw-HTML plugin is added: none is),
// links go only to http(s) and mailto addresses, and images are named, not loaded (a picture
// from elsewhere would be a request leaving the origin, and the CSP refuses it anyway).

const LINKABLE = new Set(['http:', 'https:', 'mailto:']);

/** The address itself when it is an absolute http(s) or mailto URL; null for anything else (javascript:, data:, relative). */
export function linkableHref(href: string | undefined): string | null {
  if (!href) return null;
  try {
    return LINKABLE.has(new URL(href).protocol) ? href : null;
  } catch {
    return null;
  }
}

const components: Components = {
  a: ({ href, children }) => {
    const safe = linkableHref(href);
    if (!safe) return <span className="md-unlinked">{children}</span>;
    return (
      <a href={safe} target="_blank" rel="noopener noreferrer nofollow">
        {children}
      </a>
    );
  },
  img: ({ alt }) => <span className="md-image">{alt ? `[image: ${alt}]` : '[image]'}</span>,
};

/** Renders untrusted Markdown safely (see above). */
export function UntrustedMarkdown({ children, className }: { children: string; className?: string }) {
  return (
    <div className={className ?? 'markdown'}>
      <Markdown components={components} skipHtml={false}>
        {children}
      </Markdown>
    </div>
  );
}
