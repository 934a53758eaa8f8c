import { User } from "./user";

export interface Repo<T> {
  find(id: number): T | undefined;
  save(item: T): void;
}

export type Id = number | string;

export enum Color {
  Red,
  Green,
}

export class MemoryRepo implements Repo<User> {
  private items: User[] = [];

  find(id: number): User | undefined {
    return this.items.find((u) => u.id === id);
  }

  save(item: User): void {
    this.items.push(item);
  }
}

export function makeRepo(): MemoryRepo {
  return new MemoryRepo();
}

export const sum = (a: number, b: number): number => a + b;
