<?php
namespace Shop;

use Foo\Bar;

interface Priced {
    public function price(): float;
}

class Cart implements Priced {
    public function __construct(private array $items) {}

    public function price(): float {
        return array_sum($this->items);
    }
}

function helper(int $x): int {
    return $x * 2;
}
