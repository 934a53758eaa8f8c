package shop

import scala.collection.mutable

trait Priced {
  def price: Double
}

case class Item(name: String, price: Double)

class Cart(items: List[Item]) extends Priced {
  def price: Double = items.map(_.price).sum

  def add(item: Item): Cart = new Cart(item :: items)
}

object Cart {
  def empty: Cart = new Cart(Nil)
}
