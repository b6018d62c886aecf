/** Texts from user code cut to a length the server will carry, saying how much was left out. */
export function cutText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} more characters]`;
}
