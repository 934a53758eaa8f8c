import React from "react";

interface Props {
  title: string;
}

export function Header({ title }: Props) {
  return <h1>{title}</h1>;
}

export class Panel extends React.Component<Props> {
  render() {
    return <div>{this.props.title}</div>;
  }
}
