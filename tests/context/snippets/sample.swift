import Foundation

protocol Priced {
    func price() -> Double
}

struct Item {
    let name: String
}

class Cart: Priced {
    var items: [Item] = []

    func price() -> Double {
        return 0
    }
}

func helper(x: Int) -> Int {
    return x * 2
}
