#include <string>

namespace shop {

class Item {
public:
    Item(std::string name);
    int price() const { return 42; }
private:
    std::string name_;
};

struct Pair {
    int a;
};

int total(int a, int b) {
    return a + b;
}

}  // namespace shop
