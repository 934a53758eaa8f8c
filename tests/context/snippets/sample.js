import { readFile } from "fs";

export class Store {
  constructor(items) {
    this.items = items;
  }

  get(key) {
    return this.items[key];
  }
}

export function total(prices) {
  return prices.reduce((a, b) => a + b, 0);
}

const double = (x) => x * 2;
