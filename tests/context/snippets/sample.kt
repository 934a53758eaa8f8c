package shop

import kotlin.math.max

data class Item(val name: String, val price: Double)

interface Priced {
    fun price(): Double
}

class Cart(private val items: List<Item>) : Priced {
    override fun price(): Double {
        return items.sumOf { it.price }
    }
}

fun helper(x: Int): Int {
    return x * 2
}
