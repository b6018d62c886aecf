import { randomBytes } from 'node:crypto';

// Ids for rows inserted by raw SQL, in the shape of Prisma's @default(cuid()) (which Prisma fills
// in on the client, so a raw INSERT has none): 'c', the time, a counter and randomness, base 36,
// 25 characters. Unique across processes by the random part; roughly ordered by time.

let counter = Math.floor(Math.random() * 36 ** 4);

export function newId(): string {
  counter = (counter + 1) % 36 ** 4;
  const time = Date.now().toString(36).padStart(8, '0').slice(-8);
  const count = counter.toString(36).padStart(4, '0');
  const random = BigInt(`0x${randomBytes(8).toString('hex')}`).toString(36).padStart(12, '0').slice(-12);
  return `c${time}${count}${random}`;
}
