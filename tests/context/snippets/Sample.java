package shop;

import java.util.List;

public class Cart {
    private List<String> items;

    public Cart(List<String> items) {
        this.items = items;
    }

    public int size() {
        return items.size();
    }
}

interface Priced {
    double price();
}

enum Size { SMALL, LARGE }
