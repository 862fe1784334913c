// Fibonacci numbers with BigInt: the first few, and one far too large for a
// double, with its digit count and the time it took.
"use strict";

function fib(n) {
  let a = 0n, b = 1n;
  for (let i = 0; i < n; i++) [a, b] = [b, a + b];
  return a;
}

const first = Array.from({ length: 15 }, (_, i) => fib(i));
console.log(`first 15: ${first.join(", ")}`);

const t0 = process.hrtime.bigint();
const big = fib(1000).toString();
const us = Number(process.hrtime.bigint() - t0) / 1000;
console.log(`fib(1000) has ${big.length} digits: ${big.slice(0, 20)}...${big.slice(-20)}`);
console.log(`computed in ${us.toFixed(0)} µs by node ${process.version}`);
